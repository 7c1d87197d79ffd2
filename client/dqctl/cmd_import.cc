// `dqctl import php-dq`: moves topics and pending jobs from the PHP delay
// queue (php-delayqueue's DqServer) into dq. Topics come from an export of
// its MySQL table dq_topic (client/dqctl/php_topic_dump.h, mapped by
// php_topic_row.h) and go into the registry of -c like `dqctl topic add`;
// jobs come from its Redis (php_redis_jobs.h) and go through the API
// servers of -s with their original due times, byte for byte. Re-running
// is safe: a topic that exists is left as it is, and a job dq still holds
// with the same body is answered "existing" by dq itself. The old Redis is
// only read, unless --move removes each job there once dq holds it.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/dqctl/command.h"
#include "client/dqctl/php_redis_jobs.h"
#include "client/dqctl/php_topic_dump.h"
#include "client/dqctl/php_topic_row.h"
#include "common/core/json.h"
#include "common/core/time_text.h"
#include "common/registry/callback_url.h"
#include "dq/client.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace import_command {

namespace dc = dq::client;

constexpr const char* kCommand = "import";

struct ImportArgs {
  std::string topics_file;
  std::string redis;
  std::string prefix = "dq_";
  bool dry_run = false;
  bool move = false;
};

struct Counts {
  int added = 0;
  int existing = 0;
  int failed = 0;
  int removed = 0;  // jobs removed from the old Redis (--move)
  int skipped = 0;
};

bool parse_import_args(const std::vector<std::string>& args, ImportArgs* out, int* exit_code) {
  if (args.empty() || args[0] != "php-dq") {
    *exit_code = usage_error(kCommand, "the only source is php-dq");
    return false;
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--dry-run") {
      out->dry_run = true;
      continue;
    }
    if (arg == "--move") {
      out->move = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      *exit_code = usage_error(kCommand, arg + " needs a value");
      return false;
    }
    const std::string& value = args[++i];
    if (arg == "--topics") {
      out->topics_file = value;
    } else if (arg == "--redis") {
      out->redis = value;
    } else if (arg == "--prefix") {
      out->prefix = value;
    } else {
      *exit_code = usage_error(kCommand, "unknown option " + arg);
      return false;
    }
  }
  if (out->topics_file.empty() && out->redis.empty()) {
    *exit_code = usage_error(kCommand, "give --topics FILE, --redis HOST:PORT[:AUTH] or both");
    return false;
  }
  if (out->move && out->redis.empty()) {
    *exit_code = usage_error(kCommand, "--move needs --redis");
    return false;
  }
  if (out->move && out->dry_run) {
    *exit_code = usage_error(kCommand, "--move and --dry-run exclude each other");
    return false;
  }
  return true;
}

Json counts_json(const Counts& counts) {
  return Json{{"added", counts.added},
              {"existing", counts.existing},
              {"failed", counts.failed},
              {"removed", counts.removed},
              {"skipped", counts.skipped}};
}

int import_topics(const CtlOptions& options, const ImportArgs& args, Counts* counts) {
  std::ifstream file(args.topics_file, std::ios::binary);
  if (!file) {
    return report_failure(Status(Code::kInvalid, "cannot read " + args.topics_file));
  }
  std::stringstream text;
  text << file.rdbuf();
  auto rows = read_php_topic_rows(text.str());
  if (!rows.is_ok()) {
    return report_failure(rows.status());
  }

  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  std::unique_ptr<Registry> registry;
  if (!args.dry_run) {
    registry = open_ctl_registry(options, &exit_code);
    if (!registry) {
      return exit_code;
    }
  }
  CallbackPolicy policy = CallbackPolicy::from_config(config);
  for (const PhpTopicRow& row : *rows) {
    std::vector<std::string> notes;
    auto topic = topic_from_php_row(row, &notes);
    for (const auto& note : notes) {
      fprintf(stderr, "dqctl: note: %s\n", note.c_str());
    }
    if (!topic.is_ok()) {
      fprintf(stderr, "dqctl: %s\n", topic.status().message().c_str());
      ++counts->failed;
      continue;
    }
    Status valid = validate_topic(*topic);
    if (valid.is_ok()) {
      valid = policy.check_url(topic->callback_url);
    }
    if (!valid.is_ok()) {
      fprintf(stderr, "dqctl: topic %s: %s\n", topic->name.c_str(), valid.message().c_str());
      ++counts->failed;
      continue;
    }
    if (args.dry_run) {
      auto name = row.find("t_name");
      printf("would add topic %s (%s) %s %s format=form delay=%llds timeout=%dms %s%s\n",
             topic->name.c_str(), name == row.end() ? "" : name->second.c_str(),
             topic->method.c_str(), topic->callback_url.c_str(),
             static_cast<long long>(topic->default_delay_s), topic->timeout_ms,
             topic->online ? "online" : "offline",
             topic->success_json.empty() ? "" : (" success_json=" + topic->success_json).c_str());
      continue;
    }
    if (registry->get_topic(topic->name).is_ok()) {
      if (!options.json) {
        printf("topic %s exists, left as it is\n", topic->name.c_str());
      }
      ++counts->existing;
      continue;
    }
    Status added = registry->add_topic(*topic);
    if (!added.is_ok()) {
      fprintf(stderr, "dqctl: topic %s: %s\n", topic->name.c_str(), added.message().c_str());
      ++counts->failed;
      continue;
    }
    if (!options.json) {
      printf("topic %s added\n", topic->name.c_str());
    }
    ++counts->added;
  }
  return kExitOk;
}

int import_jobs(const CtlOptions& options, const ImportArgs& args, Counts* counts) {
  auto shards = parse_shard_list(args.redis);
  if (!shards.is_ok() || shards->size() != 1) {
    return usage_error(kCommand, "--redis '" + args.redis + "' is not HOST:PORT[:AUTH]");
  }
  RedisConnection redis((*shards)[0], 2000, 30000);
  Status connected = redis.ensure_connected();
  if (!connected.is_ok()) {
    return report_failure(connected);
  }
  auto scan = scan_php_jobs(redis, args.prefix);
  if (!scan.is_ok()) {
    return report_failure(scan.status());
  }
  for (const auto& skipped : scan->skipped) {
    fprintf(stderr, "dqctl: skipped %s\n", skipped.c_str());
    ++counts->skipped;
  }
  dc::Client client({.servers = options.servers, .token = options.token});
  std::set<std::string> topics_seen;  // topics the servers were asked about
  for (const PhpJob& job : scan->jobs) {
    std::string when = job.ready ? "now" : format_local_datetime(job.due_s * 1000);
    if (args.dry_run) {
      printf("would add job %s/%s due %s (%zu bytes)\n", job.topic.c_str(), job.id.c_str(),
             when.c_str(), job.body.size());
      continue;
    }
    dc::When due = job.ready ? dc::When::delay(0) : dc::When::at(job.due_s);
    auto added = client.add(job.topic, job.id, job.body, due);
    // A topic imported a moment ago may not be in the servers' topic cache
    // yet (it is re-read at most every 200 ms): ask again for up to 2 s,
    // once per topic.
    for (int retry = 0; !added && added.error().code == dc::ErrorCode::NotFound &&
                        !topics_seen.count(job.topic) && retry < 8;
         ++retry) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      added = client.add(job.topic, job.id, job.body, due);
    }
    topics_seen.insert(job.topic);
    if (!added) {
      fprintf(stderr, "dqctl: job %s/%s not imported: %s\n", job.topic.c_str(), job.id.c_str(),
              added.error().message.c_str());
      ++counts->failed;
      if (added.error().code == dc::ErrorCode::Unavailable ||
          added.error().code == dc::ErrorCode::Timeout) {
        return report_failure(Status(Code::kUnavailable, "dq is not reachable; stopped"));
      }
      continue;
    }
    ++(added->existing ? counts->existing : counts->added);
    if (!args.move) {
      continue;
    }
    Status removed = remove_php_job(redis, args.prefix, job);
    if (!removed.is_ok()) {
      fprintf(stderr, "dqctl: job %s/%s is in dq but was not removed from the old Redis: %s\n",
              job.topic.c_str(), job.id.c_str(), removed.message().c_str());
      ++counts->failed;
      continue;
    }
    ++counts->removed;
  }
  return kExitOk;
}

int run_import(const CtlOptions& options, const std::vector<std::string>& args) {
  ImportArgs import;
  int exit_code = kExitOk;
  if (!parse_import_args(args, &import, &exit_code)) {
    return exit_code;
  }
  Counts topics, jobs;
  if (!import.topics_file.empty()) {
    exit_code = import_topics(options, import, &topics);
    if (exit_code != kExitOk) {
      return exit_code;
    }
  }
  if (!import.redis.empty()) {
    exit_code = import_jobs(options, import, &jobs);
    if (exit_code != kExitOk) {
      return exit_code;
    }
  }
  if (options.json) {
    printf("%s\n", Json{{"dry_run", import.dry_run},
                        {"topics", counts_json(topics)},
                        {"jobs", counts_json(jobs)}}
                       .dump(2)
                       .c_str());
  } else if (!import.dry_run) {
    printf("topics: %d added, %d existing, %d failed\n", topics.added, topics.existing,
           topics.failed);
    printf("jobs: %d added, %d existing, %d failed, %d skipped, %d removed from the old Redis\n",
           jobs.added, jobs.existing, jobs.failed, jobs.skipped, jobs.removed);
  }
  return topics.failed + jobs.failed > 0 ? kExitFailed : kExitOk;
}

constexpr const char* kUsage =
    "import php-dq [--topics FILE] [--redis HOST:PORT[:AUTH]] [--prefix dq_] [--dry-run] "
    "[--move]\n"
    "          (FILE: mysqldump of dq_topic or a CSV export; topics go to the registry of -c,\n"
    "           jobs to the API servers of -s; --move removes each job from the old Redis\n"
    "           once dq holds it)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_import);

}  // namespace import_command
}  // namespace dq::ctl
