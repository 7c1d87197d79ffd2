// `dqctl schedule ...`: a topic's schedules (docs/schedules.md) in the
// registry named by the config's [sqlite] path (with --url: over HTTP,
// client/dqctl/schedule_remote.h), through the shared registry
// first when [registry] shared = yes. The writes are
// common/registry/schedule_writes.h, as for the HTTP API: each is a
// versioned write of the topic. Running dqd timers pick changes up on their
// next registry refresh.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "client/dqctl/schedule_list.h"
#include "client/dqctl/schedule_remote.h"
#include "client/dqctl/topic_write_wait.h"
#include "common/core/clock.h"
#include "common/registry/schedule_writes.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share
// unity batches, and each names its kCommand and kRegistered.
namespace schedule_command {

constexpr const char* kCommand = "schedule";
constexpr size_t kNextRuns = 5;

int run_list(const CtlOptions& options, Registry& registry, const std::string& topic_name) {
  auto topic = registry.get_topic(topic_name);
  if (!topic.is_ok()) {
    return report_failure(topic.status());
  }
  int64_t now = now_ms();
  std::vector<Json> schedules;
  for (const TopicSchedule& schedule : topic->schedules) {
    schedules.push_back(schedule_to_json(schedule, topic->tz, now, kNextRuns));
  }
  return print_schedule_list(options, topic_name, std::move(schedules));
}

// add's options after TOPIC SPEC, into the request add_schedule reads.
bool parse_add_options(const std::vector<std::string>& args, Json* request) {
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--paused") {
      (*request)["paused"] = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      usage_error(kCommand, "missing value after " + arg);
      return false;
    }
    const std::string& value = args[++i];
    if (arg == "--tz") {
      (*request)["tz"] = value;
    } else if (arg == "--body") {
      (*request)["body"] = value;
    } else if (arg == "--catch-up") {
      (*request)["catch_up"] = value;
    } else {
      usage_error(kCommand, "unknown option '" + arg + "'");
      return false;
    }
  }
  return true;
}

int print_written(const CtlOptions& options, const Result<TopicSchedule>& written,
                  const std::string& topic, const std::string& tz, const std::string& message) {
  if (!written.is_ok()) {
    return report_failure(written.status());
  }
  if (options.json) {
    print_json(schedule_to_json(*written, tz, now_ms(), kNextRuns));
  } else {
    printf("schedule '%s' of topic %s %s\n", written->spec.c_str(), topic.c_str(), message.c_str());
  }
  return kExitOk;
}

int run_schedule(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.empty()) {
    return usage_error(kCommand, "missing subcommand");
  }
  const std::string& sub = args[0];
  bool known = sub == "add" || sub == "list" || sub == "del" || sub == "pause" || sub == "resume";
  if (!known) {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }
  size_t wanted = sub == "list" ? 2 : 3;
  if (args.size() < wanted || (sub != "add" && args.size() > wanted)) {
    return usage_error(kCommand, sub == "list" ? "schedule list takes TOPIC"
                                               : "schedule " + sub + " takes TOPIC SPEC");
  }
  const std::string& topic = args[1];
  Json request = Json::object();
  if (sub == "add") {
    request["spec"] = args[2];
    if (!parse_add_options(args, &request)) {
      return kExitUsage;
    }
  }
  if (!options.url.empty()) {
    return run_remote_schedule(options, sub, topic, sub == "list" ? "" : args[2], request);
  }
  int exit_code = kExitOk;
  std::unique_ptr<Registry> registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }
  if (sub == "list") {
    return run_list(options, *registry, topic);
  }
  Config config;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  auto stored = registry->get_topic(topic);
  if (!stored.is_ok()) {
    return report_failure(stored.status());
  }
  std::string spec = args[2];
  auto written = wait_for_topic_write<Result<TopicSchedule>>(
      config, *registry, false, [&](const TopicWriteContext& context, auto done) {
        if (sub == "add") {
          auto schedule = schedule_from_json(request);
          if (!schedule.is_ok()) {
            return done(schedule.status());
          }
          return add_schedule(context, topic, std::move(*schedule), std::move(done));
        }
        if (sub == "del") {
          return delete_schedule(context, topic, spec, std::move(done));
        }
        pause_schedule(context, topic, spec, sub == "pause", std::move(done));
      });
  const char* message = sub == "add"     ? "added"
                        : sub == "del"   ? "deleted"
                        : sub == "pause" ? "paused"
                                         : "resumed";
  return print_written(options, written, topic, stored->tz, message);
}

constexpr const char* kUsage =
    "schedule add TOPIC SPEC [--tz ZONE] [--body JSON] [--catch-up one|none] [--paused]\n"
    "          SPEC: five cron fields (\"*/15 9-17 * * MON-FRI\"), @hourly, @daily...,\n"
    "          or \"@every 10s\" (1h30m...); --tz: the zone SPEC is read in (default: the\n"
    "          topic's, else UTC); --body: the job body, {{tick}} and {{tick_ms}} filled\n"
    "          in; --catch-up: a tick missed while dq was down runs once at start (one,\n"
    "          the default) or not at all (none)\n"
    "schedule list TOPIC   (each with its next five run times; --json)\n"
    "schedule del TOPIC SPEC\n"
    "schedule pause TOPIC SPEC   (no tick is added until resumed)\n"
    "schedule resume TOPIC SPEC   (ticks missed while paused follow --catch-up)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_schedule);

}  // namespace schedule_command
}  // namespace dq::ctl
