// `dqctl topic stats`: registered topics from the registry, numbers from the
// Redis shards of the config (common/store/topic_stats.h). Shards that could not be
// reached are named on stderr; the numbers are then those of the others.
#include "client/dqctl/topic_stats_view.h"

#include <cstdio>
#include <map>
#include <memory>

#include "common/core/json.h"
#include "common/registry/registry.h"
#include "common/store/topic_stats.h"
#include "common/store/waiting_shards.h"

namespace dq::ctl {
namespace {

std::string n(int64_t value) { return std::to_string(value); }

int print_all(const CtlOptions& options, WaitingShards& shards,
              const std::vector<Topic>& registered) {
  std::vector<std::string> names;
  std::map<std::string, bool> online;
  for (const Topic& topic : registered) {
    names.push_back(topic.name);
    online[topic.name] = topic.online;
  }
  auto all = shards.wait<Result<std::vector<TopicStats>>>(
      [&](std::function<void(Result<std::vector<TopicStats>>)> done) {
        all_topic_stats(shards.set(), names, /*with_series=*/false, done);
      });
  if (!all.is_ok()) {
    return report_failure(all.status());
  }
  auto status_of = [&](const std::string& name) -> std::string {
    auto found = online.find(name);
    if (found == online.end()) {
      return "unregistered";
    }
    return found->second ? "online" : "offline";
  };
  if (options.json) {
    Json out = Json::array();
    for (const auto& stats : *all) {
      Json entry = to_json(stats);
      entry["status"] = status_of(stats.topic);
      out.push_back(std::move(entry));
    }
    printf("%s\n", out.dump(2).c_str());
  } else {
    std::vector<std::vector<std::string>> rows = {{"TOPIC", "STATUS", "DELAYED", "READY", "WORKING",
                                                   "RETRYING", "DEAD", "ADDED", "DELIVERED",
                                                   "FAILED"}};
    for (const auto& s : *all) {
      rows.push_back({s.topic, status_of(s.topic), n(s.now.delayed), n(s.now.ready),
                      n(s.now.working), n(s.now.retrying), n(s.now.dead), n(s.total.added),
                      n(s.total.delivered), n(s.total.failed)});
    }
    print_rows(rows);
  }
  if (!all->empty()) {
    warn_shards_not_reached(all->front().unreachable_shards, "left out of the numbers");
  }
  return kExitOk;
}

int print_one(const CtlOptions& options, WaitingShards& shards, const Topic& topic) {
  auto stats = shards.wait<Result<TopicStats>>([&](std::function<void(Result<TopicStats>)> done) {
    topic_stats(shards.set(), topic.name, /*with_series=*/true, done);
  });
  if (!stats.is_ok()) {
    return report_failure(stats.status());
  }
  if (options.json) {
    Json out = to_json(*stats);
    out["status"] = topic.online ? "online" : "offline";
    printf("%s\n", out.dump(2).c_str());
    warn_shards_not_reached(stats->unreachable_shards, "left out of the numbers");
    return kExitOk;
  }
  const StateCounts& now = stats->now;
  const EventCounts& total = stats->total;
  printf("topic %s (%s)\n", topic.name.c_str(), topic.online ? "online" : "offline");
  print_rows({{"now:", "delayed " + n(now.delayed), "ready " + n(now.ready),
               "working " + n(now.working), "retrying " + n(now.retrying), "dead " + n(now.dead)}});
  EventCounts hour;
  for (const auto& [minute, c] : stats->per_minute) {
    hour.added += c.added;
    hour.delivered += c.delivered;
    hour.failed += c.failed;
    hour.dead += c.dead;
  }
  std::vector<std::vector<std::string>> rows = {
      {"", "ADDED", "DELIVERED", "FAILED", "DEAD", "DELETED", "EXPIRED", "REQUEUED", "DUPLICATE"},
      {"total", n(total.added), n(total.delivered), n(total.failed), n(total.dead),
       n(total.deleted), n(total.expired), n(total.requeued), n(total.duplicate)},
      {"last hour", n(hour.added), n(hour.delivered), n(hour.failed), n(hour.dead)}};
  // Days with anything counted, newest first.
  for (auto it = stats->per_day.rbegin(); it != stats->per_day.rend(); ++it) {
    const EventCounts& c = it->second;
    if (c.added + c.delivered + c.failed + c.dead + c.deleted + c.expired + c.requeued +
            c.duplicate ==
        0) {
      continue;
    }
    rows.push_back({it->first, n(c.added), n(c.delivered), n(c.failed), n(c.dead), n(c.deleted),
                    n(c.expired), n(c.requeued), n(c.duplicate)});
  }
  print_rows(rows);
  warn_shards_not_reached(stats->unreachable_shards, "left out of the numbers");
  return kExitOk;
}

}  // namespace

int run_topic_stats(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.size() > 2) {
    return usage_error("topic", "topic stats takes at most one NAME");
  }
  int exit_code = kExitOk;
  std::unique_ptr<Registry> registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }
  Config config;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  WaitingShards shards(config);
  if (args.size() == 2) {
    auto topic = registered_topic(*registry, args[1]);
    if (!topic.is_ok()) {
      return report_failure(topic.status());
    }
    return print_one(options, shards, *topic);
  }
  auto topics = registry->list_topics();
  if (!topics.is_ok()) {
    return report_failure(topics.status());
  }
  return print_all(options, shards, *topics);
}

}  // namespace dq::ctl
