// `dqctl topic ...`: list, show, add, set, online, offline and del topics in
// the SQLite registry named by the config's [sqlite] path, and with
// [registry] shared = yes in the shared registry first; or, with --url, over
// the HTTP API of a dq host (client/dqctl/topic_remote.h). The writes are
// common/registry/topic_writes.h, as for the admin page and the HTTP API:
// the fields' checks, the callback URL rules of the config, versioned
// writes (set writes at the version it read). Running dqd children pick
// changes up on their next refresh ([master] registry_refresh_ms).
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
#include "client/dqctl/topic_options.h"
#include "client/dqctl/topic_remote.h"
#include "client/dqctl/topic_stats_view.h"
#include "client/dqctl/topic_write_wait.h"
#include "common/core/json.h"
#include "common/registry/registry.h"
#include "common/registry/topic_caps.h"
#include "common/registry/topic_json.h"
#include "common/registry/topic_writes.h"

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
  line("mode:", topic.mode);
  line("callback_url:", topic.callback_url.empty() ? std::string("(none: workers reserve its jobs)")
                                                   : topic.callback_url);
  line("method:", topic.method);
  line("format:", topic.callback_format);
  line("success_json:", topic.success_json.empty() ? "(any 2xx)" : topic.success_json);
  line("timeout_ms:", std::to_string(topic.timeout_ms));
  line("default_delay_s:", std::to_string(topic.default_delay_s));
  line("tz:", topic.tz.empty() ? std::string("(the server's zone)") : topic.tz);
  line("delivery_window:",
       topic.delivery_window.empty() ? std::string("(any hour)") : topic.delivery_window);
  line("max_attempts:",
       topic.max_attempts == 0 ? "0 (the [delivery] default)" : std::to_string(topic.max_attempts));
  line("priority:", std::to_string(topic.priority));
  line("retry_ms:", topic.retry_ms.empty() ? "(2n+1 backoff)" : topic.retry_ms);
  line("retry_jitter:", std::to_string(topic.retry_jitter) + "%");
  line("max_deferrals:", std::to_string(topic.max_deferrals));
  line("dead_on:", topic.dead_on.empty() ? "(none)" : topic.dead_on);
  line("dead_callback:", topic.dead_callback.empty() ? "(none)" : topic.dead_callback);
  line("dedup_window_s:", topic.dedup_window_s == 0
                              ? std::string("0 (ended jobs not remembered)")
                              : std::to_string(topic.dedup_window_s) +
                                    " (a retried add of an ended job answers how it ended)");
  line("max_retry_duration_s:",
       topic.max_retry_duration_s == 0
           ? std::string("0 (no limit)")
           : std::to_string(topic.max_retry_duration_s) +
                 " (a job retried or held this long after its first attempt is dead)");
  line("ttl:", topic.ttl == 0 ? std::string("0 (no limit)")
                              : std::to_string(topic.ttl) +
                                    " (a job not delivered this long after it is due never is)");
  line("keep_done_days:",
       topic.keep_done_days == 0
           ? std::string("0 (gone jobs not kept: GET answers 404)")
           : std::to_string(topic.keep_done_days) + " (GET answers a gone job's final state)");
  line("late_policy:", topic.late_policy);
  line("on_dependency_dead:", topic.on_dependency_dead == "release"
                                  ? std::string("release (a waiter goes on when what it waits "
                                                "for dies, expires or is deleted)")
                                  : std::string("dead (a waiter dies when what it waits for "
                                                "dies, expires or is deleted)"));
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
int print_changed(const CtlOptions& options, const TopicWritten& written,
                  const std::string& message) {
  if (options.json) {
    print_json(written.to_json());
    return kExitOk;
  }
  printf("%s\n", message.c_str());
  if (!written.new_signing_secret.empty()) {
    printf("signing secret (shown this once; keep it for the receiver): %s\n",
           written.new_signing_secret.c_str());
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

// add, set, online and offline: one write of the fields, then its message.
int run_write(const CtlOptions& options, Registry& registry, const std::string& name,
              const Json& fields, TopicEdit edit, const std::string& message) {
  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  TopicWriteRequest request{name, fields, edit, std::nullopt, nullptr};
  auto written = wait_for_topic_write<Result<TopicWritten>>(
      config, registry, false, [&](const TopicWriteContext& context, auto done) {
        write_topic(context, request, std::move(done));
      });
  if (!written.is_ok()) {
    return report_failure(written.status());
  }
  return print_changed(options, *written, message);
}

// Prints a deletion as --json or as a sentence.
int print_deleted(const CtlOptions& options, const TopicDeleted& deleted, bool purge) {
  const std::string& name = deleted.name;
  if (options.json) {
    Json out{{"deleted", name}};
    if (purge) {
      out["purged_jobs"] = deleted.purged_jobs;
      out["in_flight_jobs"] = deleted.in_flight_jobs;
    }
    print_json(out);
  } else if (purge) {
    printf("topic %s deleted with %lld job(s)\n", name.c_str(),
           static_cast<long long>(deleted.purged_jobs));
    if (deleted.in_flight_jobs > 0) {
      printf(
          "%lld of them were being delivered and could not be stopped: their callbacks still "
          "complete\n",
          static_cast<long long>(deleted.in_flight_jobs));
    }
  } else {
    printf("topic %s deleted\n", name.c_str());
  }
  return kExitOk;
}

// Deletes the topic when it holds no job, or with --purge after deleting
// its jobs. Every shard must answer: an unreachable one might hold jobs.
int run_delete(const CtlOptions& options, Registry& registry, const std::string& name, bool purge) {
  if (auto topic = registry.get_topic(name); !topic.is_ok()) {
    return report_failure(topic.status());  // before connecting to any shard
  }
  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  using Outcome = std::pair<Status, TopicDeleted>;
  Outcome outcome = wait_for_topic_write<Outcome>(
      config, registry, true, [&](const TopicWriteContext& context, auto done) {
        delete_topic(context, name, purge, std::nullopt,
                     [done](const Status& status, const TopicDeleted& deleted) {
                       done(Outcome{status, deleted});
                     });
      });
  const auto& [status, deleted] = outcome;
  if (deleted.held_jobs > 0) {
    return report_failure(Status(status.code(), status.message() +
                                                    ". Wait for them, delete them, or use `dqctl "
                                                    "topic del " +
                                                    name +
                                                    " --purge` to delete the topic with its jobs"));
  }
  if (!status.is_ok()) {
    return report_failure(status);
  }
  return print_deleted(options, deleted, purge);
}

int run_topic(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.empty()) {
    return usage_error(kCommand, "missing subcommand");
  }
  const std::string& sub = args[0];
  std::string name;
  Json fields = Json::object();
  bool purge = false;
  if (sub == "stats") {
    return run_topic_stats(options, args);
  }
  if (sub == "list") {
    if (args.size() > 1) {
      return usage_error(kCommand, "topic list takes no arguments");
    }
  } else if (sub == "add" || sub == "set") {
    if (!parse_topic_args(sub, args, &name, &fields)) {
      return kExitUsage;
    }
    if (sub == "add" && !fields.contains("callback_url") && fields.value("mode", "") != "pull") {
      return usage_error(kCommand, "topic add needs --callback URL (or --mode pull)");
    }
    if (sub == "set" && fields.empty()) {
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
    if (sub != "show") {
      fields["online"] = sub == "online";
    }
  } else {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }
  if (!options.url.empty()) {
    return run_remote_topic(options, sub, name, fields, purge);
  }

  int exit_code = kExitOk;
  std::unique_ptr<Registry> registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }
  if (sub == "list") {
    return run_list(options, *registry);
  }
  if (sub == "show") {
    return run_show(options, *registry, name);
  }
  if (sub == "add") {
    return run_write(options, *registry, name, fields, TopicEdit::kCreate,
                     "topic " + name + " added");
  }
  if (sub == "set") {
    return run_write(options, *registry, name, fields, TopicEdit::kUpdate,
                     "topic " + name + " updated");
  }
  if (sub == "online" || sub == "offline") {
    return run_write(options, *registry, name, fields, TopicEdit::kUpdate,
                     "topic " + name + " is " + sub);
  }
  return run_delete(options, *registry, name, purge);
}

constexpr const char* kUsage =
    "topic list\n"
    "topic show NAME\n"
    "topic add NAME --callback URL [--method POST|GET] [--timeout-ms N] [--delay S]\n"
    "          [--mode push|pull]   (pull: no --callback; workers reserve its jobs:\n"
    "          dqctl reserve, dqctl work)\n"
    "          [--tz ZONE]   (IANA, e.g. Europe/Paris: adds' at and fix_time without an\n"
    "          offset are read there; \"\": the server's zone)\n"
    "          [--delivery-window 'Mon-Fri 09:00-18:00 Asia/Shanghai'|off]   (jobs due\n"
    "          outside it wait for the opening; no zone: the topic's tz, else UTC)\n"
    "          [--max-attempts N] [--priority 1|2|3] [--email a@x,b@y] [--retry-ms 1000,3000]\n"
    "          [--creator WHO] [--format json|form] [--success-json PATH=VALUE]\n"
    "          [--max-deferrals N] [--dead-on 400,410] [--retry-jitter PERCENT]\n"
    "          [--circuit-breaker on|off] [--circuit-failures N] [--circuit-open-ms N]\n"
    "          [--max-in-flight N] [--max-rate PER_S] [--max-burst N]   (0: no cap)\n"
    "          [--signing-secret generate|whsec_...|off] [--signing-ed25519 generate|off]\n"
    "          [--overlap 24h]   (a replaced signing key is still sent this long)\n"
    "          [--dead-callback URL|off]   (POSTed, signed, when a job dies)\n"
    "          [--dedup-window-s S]   (a retried add within S of its job's end answers\n"
    "          how it ended; default 600, 0: not remembered)\n"
    "          [--max-retry-duration-s S]   (a job still not delivered S after its first\n"
    "          attempt is dead, whatever held it; default 604800, 0: no limit)\n"
    "          [--ttl S]   (a job not delivered S after it is due never is; 0: no limit)\n"
    "          [--keep-done-days N]   (GET answers a gone job's final state N days)\n"
    "          [--late-policy deliver|dead_after:S|drop_after:S]\n"
    "          [--on-dependency-dead dead|release]   (a job added with --after whose\n"
    "          dependency dies, expires or is deleted: dead-lettered, or released)\n"
    "topic set NAME [any option of add]\n"
    "topic online NAME\n"
    "topic offline NAME\n"
    "topic del NAME [--purge]   (refused while the topic holds jobs, unless --purge)\n"
    "topic stats [NAME]   (jobs per state now, events in total, per day; all topics without NAME)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_topic);

}  // namespace topic_command
}  // namespace dq::ctl
