// `dqctl topic ...`: list, show, add, set, online, offline and del topics in
// the SQLite registry named by the config's [sqlite] path, and with
// [registry] shared = yes in the shared registry first (registry_write_ctl.h;
// set writes at the version it read). Running dqd children pick changes up
// on their next refresh ([master] registry_refresh_ms).
// A callback URL given to add or set is held to the callback URL rules of the
// config (common/registry/callback_url.h): no Redis shard, no dq listener, the allowlist.
// `del` also asks the Redis shards: a topic that still holds jobs is kept
// unless --purge deletes its jobs too.
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "client/dqctl/command.h"
#include "client/dqctl/registry_write_ctl.h"
#include "client/dqctl/topic_options.h"
#include "client/dqctl/topic_stats_view.h"
#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/registry/callback_rules.h"
#include "common/registry/callback_url.h"
#include "common/registry/registry.h"
#include "common/registry/topic_caps.h"
#include "common/registry/topic_json.h"
#include "common/store/job_store.h"
#include "common/store/topic_jobs.h"
#include "common/store/waiting_shards.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace topic_command {

constexpr const char* kCommand = "topic";

void print_topic(const Topic& topic) {
  auto line = [](const char* key, const std::string& value) {
    printf("%-16s %s\n", key, value.c_str());
  };
  line("name:", topic.name);
  line("status:", topic.online ? "online" : "offline");
  line("callback_url:", topic.callback_url);
  line("method:", topic.method);
  line("format:", topic.callback_format);
  line("success_json:", topic.success_json.empty() ? "(any 2xx)" : topic.success_json);
  line("timeout_ms:", std::to_string(topic.timeout_ms));
  line("default_delay_s:", std::to_string(topic.default_delay_s));
  line("max_attempts:",
       topic.max_attempts == 0 ? "0 (the [delivery] default)" : std::to_string(topic.max_attempts));
  line("priority:", std::to_string(topic.priority));
  line("retry_ms:", topic.retry_ms.empty() ? "(2n+1 backoff)" : topic.retry_ms);
  line("retry_jitter:", std::to_string(topic.retry_jitter) + "%");
  line("max_deferrals:", std::to_string(topic.max_deferrals));
  line("dead_on:", topic.dead_on.empty() ? "(none)" : topic.dead_on);
  line("dead_callback:", topic.dead_callback.empty() ? "(none)" : topic.dead_callback);
  line("alert_emails:", topic.alert_emails);
  line("creator:", topic.creator);
  line("circuit_breaker:", topic.circuit_breaker ? "on" : "off");
  line("circuit_failures:", std::to_string(topic.circuit_failures));
  line("circuit_open_ms:", std::to_string(topic.circuit_open_ms));
  Json signing = topic_to_json(topic);  // masked, as every listing shows it
  std::string secret = signing["signing_secret"];
  std::string public_key = signing["signing_public_key"];
  line("signing_secret:", secret.empty() ? "(none)" : secret);
  line("signing_ed25519:", public_key.empty() ? "(none)" : public_key);
  line("created_at:", format_time(topic.created_at_ms));
  line("updated_at:", format_time(topic.updated_at_ms));
  auto cap = [](int value, const char* unit) {
    return value == 0 ? std::string("0 (no cap)") : std::to_string(value) + unit;
  };
  line("max_in_flight:", cap(topic.max_in_flight, " calls open at once"));
  line("max_rate:", cap(topic.max_rate, " calls/s"));
  if (topic.max_rate > 0) {
    line("max_burst:", std::to_string(effective_burst(topic)) +
                           (topic.max_burst == 0 ? " (a tenth of max_rate)" : ""));
  }
}

void print_table(const std::vector<Topic>& topics) {
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "STATUS", "PRIORITY", "METHOD", "CALLBACK"}};
  for (const Topic& topic : topics) {
    rows.push_back({topic.name, topic.online ? "online" : "offline", std::to_string(topic.priority),
                    topic.method, topic.callback_url});
  }
  print_rows(rows);
}

// Prints the topic as the result of a change: JSON, or a one-line message.
// A signing secret the change made is shown in full, this once (docs/security.md).
int print_changed(const CtlOptions& options, Registry& registry, const std::string& name,
                  const std::string& message, const std::string& new_secret = "") {
  if (options.json) {
    auto topic = registry.get_topic(name);
    if (!topic.is_ok()) {
      return report_failure(topic.status());
    }
    Json json = topic_to_json(*topic);
    if (!new_secret.empty()) {
      json["signing_secret"] = new_secret;
    }
    print_json(json);
  } else {
    printf("%s\n", message.c_str());
    if (!new_secret.empty()) {
      printf("signing secret (shown this once; keep it for the receiver): %s\n",
             new_secret.c_str());
    }
  }
  return kExitOk;
}

int run_list(const CtlOptions& options, Registry& registry) {
  return print_listing(options, registry.list_topics(), topic_to_json, print_table);
}

int run_show(const CtlOptions& options, Registry& registry, const std::string& name) {
  auto topic = registry.get_topic(name);
  if (!topic.is_ok()) {
    return report_failure(topic.status());
  }
  if (options.json) {
    print_json(topic_to_json(*topic));
  } else {
    print_topic(*topic);
  }
  return kExitOk;
}

int run_add(const CtlOptions& options, Registry& registry, const std::string& name,
            const TopicOptions& edits) {
  Topic topic;
  topic.name = name;
  Status status = edits.apply(&topic);
  if (status.is_ok()) {
    status = write_registry_change(
        options, registry,
        ObjectWrite{find_registry_kind("topic"), name, PutMode::kCreate, std::nullopt,
                    [&registry, &topic] { return registry.add_topic(topic); }});
  }
  if (!status.is_ok()) {
    return report_failure(status);
  }
  return print_changed(options, registry, name, "topic " + name + " added",
                       new_signing_secret(Topic{}, topic));
}

// Reads, changes and writes back one topic (set, online, offline).
int run_update(const CtlOptions& options, Registry& registry, const std::string& name,
               const TopicOptions& edits, std::optional<bool> online, const std::string& message) {
  auto topic = registry.get_topic(name);
  if (!topic.is_ok()) {
    return report_failure(topic.status());
  }
  Topic before = *topic;
  Status status = edits.apply(&*topic);
  if (online) {
    topic->online = *online;
  }
  // Written at the version read: an edit made meanwhile is refused, not undone.
  if (status.is_ok()) {
    status = write_registry_change(
        options, registry,
        ObjectWrite{find_registry_kind("topic"), name, PutMode::kUpdate, topic->version,
                    [&registry, &topic] { return registry.update_topic(*topic); }});
  }
  if (!status.is_ok()) {
    return report_failure(status);
  }
  return print_changed(options, registry, name, message, new_signing_secret(before, *topic));
}

// Deletes the topic when it holds no job, or with --purge after deleting
// its jobs. Every shard must answer: an unreachable one might hold jobs.
int run_delete(const CtlOptions& options, Registry& registry, const std::string& name, bool purge) {
  auto topic = registry.get_topic(name);
  if (!topic.is_ok()) {
    return report_failure(topic.status());
  }
  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  WaitingShards shards(config);
  // Purged while being delivered: those callbacks still complete.
  auto in_flight = std::make_shared<int64_t>(0);
  auto purge_jobs = [&]() {
    return shards.wait<Result<int64_t>>([&](std::function<void(Result<int64_t>)> done) {
      purge_topic_jobs(shards.set(), name, done, in_flight);
    });
  };
  int64_t purged = 0;
  if (purge) {
    auto deleted = purge_jobs();
    if (!deleted.is_ok()) {
      return report_failure(deleted.status());
    }
    purged = *deleted;
  } else {
    auto held = shards.wait<Result<int64_t>>([&](std::function<void(Result<int64_t>)> done) {
      count_topic_jobs(shards.set(), name, done);
    });
    if (!held.is_ok()) {
      return report_failure(held.status());
    }
    if (*held > 0) {
      return report_failure(Status(
          Code::kConflict, "topic " + name + " still holds " + std::to_string(*held) +
                               " job(s) (pending or dead); not deleted. Wait for them, delete "
                               "them, or use `dqctl topic del " +
                               name + " --purge` to delete the topic with its jobs"));
    }
  }
  Status status = write_registry_change(
      options, registry,
      ObjectWrite{find_registry_kind("topic"), name, PutMode::kDelete, std::nullopt,
                  [&registry, &name] { return registry.delete_topic(name); }});
  if (!status.is_ok()) {
    return report_failure(status);
  }
  if (purge) {
    // A producer whose server had not yet seen the deletion may have added
    // a job meanwhile: sweep once more.
    auto late = purge_jobs();
    if (!late.is_ok()) {
      return report_failure(late.status());
    }
    purged += *late;
  }
  if (options.json) {
    Json out{{"deleted", name}};
    if (purge) {
      out["purged_jobs"] = purged;
      out["in_flight_jobs"] = *in_flight;
    }
    print_json(out);
  } else if (purge) {
    printf("topic %s deleted with %lld job(s)\n", name.c_str(), static_cast<long long>(purged));
    if (*in_flight > 0) {
      printf(
          "%lld of them were being delivered and could not be stopped: their callbacks still "
          "complete\n",
          static_cast<long long>(*in_flight));
    }
  } else {
    printf("topic %s deleted\n", name.c_str());
  }
  return kExitOk;
}

// The callback URL rules of this config, with the shards added in the
// registry too; kInvalid (exit 1) when the URL breaks one.
Status check_callback(const CtlOptions& options, Registry& registry, const std::string& url,
                      int* exit_code) {
  Config config;
  if (!load_ctl_config(options, &config, exit_code)) {
    return Status(Code::kInvalid, "");
  }
  return check_callback_url(config, registry, url);
}

int run_topic(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.empty()) {
    return usage_error(kCommand, "missing subcommand");
  }
  const std::string& sub = args[0];
  std::string name;
  TopicOptions edits;
  bool purge = false;
  if (sub == "stats") {
    return run_topic_stats(options, args);
  }
  if (sub == "list") {
    if (args.size() > 1) {
      return usage_error(kCommand, "topic list takes no arguments");
    }
  } else if (sub == "add" || sub == "set") {
    if (!parse_topic_args(sub, args, &name, &edits)) {
      return kExitUsage;
    }
    if (sub == "add" && !edits.callback_url) {
      return usage_error(kCommand, "topic add needs --callback URL");
    }
    if (sub == "set" && !edits.any()) {
      return usage_error(kCommand, "topic set needs at least one option");
    }
  } else if (sub == "del") {
    std::vector<std::string> rest;
    for (const auto& arg : args) {
      if (arg == "--purge") {
        purge = true;
      } else {
        rest.push_back(arg);
      }
    }
    if (!parse_topic_args(sub, rest, &name, nullptr)) {
      return kExitUsage;
    }
  } else if (sub == "show" || sub == "online" || sub == "offline") {
    if (!parse_topic_args(sub, args, &name, nullptr)) {
      return kExitUsage;
    }
  } else {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }

  int exit_code = kExitOk;
  std::unique_ptr<Registry> registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }

  if (edits.callback_url) {
    Status allowed = check_callback(options, *registry, *edits.callback_url, &exit_code);
    if (exit_code != kExitOk) {
      return exit_code;
    }
    if (!allowed.is_ok()) {
      return report_failure(allowed);
    }
  }

  if (edits.dead_callback && !edits.dead_callback->empty()) {
    Status allowed = check_callback(options, *registry, *edits.dead_callback, &exit_code);
    if (exit_code != kExitOk) {
      return exit_code;
    }
    if (!allowed.is_ok()) {
      return report_failure(dead_callback_status(allowed));
    }
  }

  if (sub == "list") {
    return run_list(options, *registry);
  }
  if (sub == "show") {
    return run_show(options, *registry, name);
  }
  if (sub == "add") {
    return run_add(options, *registry, name, edits);
  }
  if (sub == "set") {
    return run_update(options, *registry, name, edits, std::nullopt, "topic " + name + " updated");
  }
  if (sub == "online") {
    return run_update(options, *registry, name, {}, true, "topic " + name + " is online");
  }
  if (sub == "offline") {
    return run_update(options, *registry, name, {}, false, "topic " + name + " is offline");
  }
  return run_delete(options, *registry, name, purge);
}

constexpr const char* kUsage =
    "topic list\n"
    "topic show NAME\n"
    "topic add NAME --callback URL [--method POST|GET] [--timeout-ms N] [--delay S]\n"
    "          [--max-attempts N] [--priority 1|2|3] [--email a@x,b@y] [--retry-ms 1000,3000]\n"
    "          [--creator WHO] [--format json|form] [--success-json PATH=VALUE]\n"
    "          [--max-deferrals N] [--dead-on 400,410] [--retry-jitter PERCENT]\n"
    "          [--circuit-breaker on|off] [--circuit-failures N] [--circuit-open-ms N]\n"
    "          [--max-in-flight N] [--max-rate PER_S] [--max-burst N]   (0: no cap)\n"
    "          [--signing-secret generate|whsec_...|off] [--signing-ed25519 generate|off]\n"
    "          [--overlap 24h]   (a replaced signing key is still sent this long)\n"
    "          [--dead-callback URL|off]   (POSTed, signed, when a job dies)\n"
    "topic set NAME [any option of add]\n"
    "topic online NAME\n"
    "topic offline NAME\n"
    "topic del NAME [--purge]   (refused while the topic holds jobs, unless --purge)\n"
    "topic stats [NAME]   (jobs per state now, events in total, per day; all topics without NAME)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_topic);

}  // namespace topic_command
}  // namespace dq::ctl
