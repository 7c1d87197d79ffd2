// `dqctl stats [TOPIC] [--watch [SECONDS]]`: per topic, the jobs held now by
// state and the event counters since the shards began — the numbers
// /metrics exports (common/topic_stats.h), read straight from Redis. With
// --watch the table is redrawn every SECONDS (default 2) until interrupted,
// with the rate of adds and deliveries since the previous draw.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/clock.h"
#include "common/job_store.h"
#include "common/registry.h"
#include "common/stop_flag.h"
#include "common/topic_stats.h"

namespace dq::ctl {
namespace {

constexpr const char* kCommand = "stats";
constexpr const char* kUsage =
    "stats [TOPIC] [--watch [SECONDS]]   jobs by state and event counters per topic "
    "(as /metrics)";

void print_table(const std::vector<TopicStats>& stats,
                 const std::map<std::string, EventCounts>& before, double seconds_since) {
  std::printf("%-24s %9s %9s %9s %9s %9s %11s %11s %9s %7s", "TOPIC", "DELAYED", "READY", "WORKING",
              "RETRYING", "DEAD", "ADDED", "DELIVERED", "FAILED", "DIED");
  bool rates = !before.empty() && seconds_since > 0;
  if (rates) std::printf(" %9s %9s", "ADDS/S", "DELIV/S");
  std::printf("\n");
  std::vector<std::string> unreachable;
  for (const auto& topic : stats) {
    const StateCounts& now = topic.now;
    const EventCounts& total = topic.total;
    std::printf("%-24s %9lld %9lld %9lld %9lld %9lld %11lld %11lld %9lld %7lld",
                topic.topic.c_str(), static_cast<long long>(now.delayed),
                static_cast<long long>(now.ready), static_cast<long long>(now.working),
                static_cast<long long>(now.retrying), static_cast<long long>(now.dead),
                static_cast<long long>(total.added), static_cast<long long>(total.delivered),
                static_cast<long long>(total.failed), static_cast<long long>(total.dead));
    if (rates) {
      auto previous = before.find(topic.topic);
      EventCounts then = previous == before.end() ? total : previous->second;
      std::printf(" %9.1f %9.1f", static_cast<double>(total.added - then.added) / seconds_since,
                  static_cast<double>(total.delivered - then.delivered) / seconds_since);
    }
    std::printf("\n");
    if (unreachable.empty()) unreachable = topic.unreachable_shards;
  }
  for (const auto& shard : unreachable) {
    std::printf("shard %s did not answer: its jobs are not counted\n", shard.c_str());
  }
}

int run_stats(const CtlOptions& options, const std::vector<std::string>& args) {
  std::string topic;
  bool watch = false;
  int64_t every_s = 2;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--watch") {
      watch = true;
      if (i + 1 < args.size() && parse_int_arg(args[i + 1], 1, 3600, &every_s)) ++i;
    } else if (topic.empty() && !args[i].empty() && args[i][0] != '-') {
      topic = args[i];
    } else {
      return usage_error(kCommand, "bad argument '" + args[i] + "'");
    }
  }
  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) return exit_code;
  std::vector<std::string> names;
  if (!topic.empty()) {
    exit_code = require_known_topic(options, topic);
    if (exit_code != kExitOk) return exit_code;
    names.push_back(topic);
  } else {
    auto registry = open_ctl_registry(options, &exit_code);
    if (!registry) return exit_code;
    auto topics = registry->list_topics();
    if (!topics.is_ok()) return report_failure(topics.status());
    for (const auto& each : *topics) names.push_back(each.name);
  }
  JobStore store(config);
  install_stop_handlers();
  std::map<std::string, EventCounts> before;
  int64_t drawn_at_ms = 0;
  for (;;) {
    auto stats = all_topic_stats(store, names, false);
    if (!stats.is_ok()) return report_failure(stats.status());
    if (!topic.empty()) {
      std::vector<TopicStats> one;
      for (auto& each : *stats) {
        if (each.topic == topic) one.push_back(each);
      }
      *stats = one;
    }
    if (options.json) {
      Json list = Json::array();
      for (const auto& each : *stats) list.push_back(to_json(each));
      std::printf("%s\n", list.dump().c_str());
    } else {
      if (watch) std::printf("\033[H\033[2J");  // clear the terminal
      int64_t now = monotonic_ms();
      print_table(*stats, before, drawn_at_ms == 0 ? 0 : (now - drawn_at_ms) / 1000.0);
      drawn_at_ms = now;
      before.clear();
      for (const auto& each : *stats) before[each.topic] = each.total;
    }
    std::fflush(stdout);
    if (!watch) return kExitOk;
    for (int64_t waited = 0; waited < every_s * 1000 && !stop_requested(); waited += 100) {
      usleep(100 * 1000);
    }
    if (stop_requested()) return kExitOk;
  }
}

const CommandRegistration kRegistered(kCommand, kUsage, &run_stats);

}  // namespace
}  // namespace dq::ctl
