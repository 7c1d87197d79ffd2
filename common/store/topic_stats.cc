// topic_stats and all_topic_stats: every shard at once, each one pipelined
// pass over the counter hashes (after Redis TIME for the series), summed per
// topic. For one topic the hashes are read with HMGET of its fields; for all
// topics with HGETALL.
#include "common/store/topic_stats.h"

#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "common/core/clock.h"
#include "common/store/job.h"
#include "common/store/keys.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr int64_t kMinutes = 60;
constexpr int kDays = 30;

const char* const kStateLetters[] = {"d", "r", "w", "y", "x", "b"};
const char* const kEvents[] = {"added",        "delivered",   "failed",       "dead",
                               "deleted",      "expired",     "requeued",     "duplicate",
                               "updated",      "ttl_expired", "late_dropped", "tick_added",
                               "tick_skipped", "window_held"};

int64_t* state_slot(StateCounts& counts, std::string_view letter) {
  if (letter == "d") {
    return &counts.delayed;
  }
  if (letter == "r") {
    return &counts.ready;
  }
  if (letter == "w") {
    return &counts.working;
  }
  if (letter == "y") {
    return &counts.retrying;
  }
  if (letter == "x") {
    return &counts.dead;
  }
  if (letter == "b") {
    return &counts.waiting;
  }
  return nullptr;
}

int64_t* event_slot(EventCounts& counts, std::string_view event) {
  if (event == "added") {
    return &counts.added;
  }
  if (event == "delivered") {
    return &counts.delivered;
  }
  if (event == "failed") {
    return &counts.failed;
  }
  if (event == "dead") {
    return &counts.dead;
  }
  if (event == "deleted") {
    return &counts.deleted;
  }
  if (event == "expired") {
    return &counts.expired;
  }
  if (event == "requeued") {
    return &counts.requeued;
  }
  if (event == "duplicate") {
    return &counts.duplicate;
  }
  if (event == "updated") {
    return &counts.updated;
  }
  if (event == "ttl_expired") {
    return &counts.ttl_expired;
  }
  if (event == "late_dropped") {
    return &counts.late_dropped;
  }
  if (event == "tick_added") {
    return &counts.tick_added;
  }
  if (event == "tick_skipped") {
    return &counts.tick_skipped;
  }
  if (event == "window_held") {
    return &counts.window_held;
  }
  return nullptr;
}

// The last kDays local calendar days, oldest first. Steps from local noon so
// a daylight saving change never skips or repeats a day.
std::vector<std::string> last_days(int64_t now) {
  time_t seconds = static_cast<time_t>(now / 1000);
  struct tm today {};
  localtime_r(&seconds, &today);
  std::vector<std::string> days;
  for (int back = kDays - 1; back >= 0; --back) {
    struct tm day = today;
    day.tm_hour = 12;
    day.tm_min = day.tm_sec = 0;
    day.tm_isdst = -1;
    day.tm_mday -= back;
    days.push_back(day_of(static_cast<int64_t>(mktime(&day)) * 1000));
  }
  return days;
}

// One counter field "topic:name" with its value.
struct Counter {
  std::string topic;
  std::string name;
  int64_t value = 0;
};

bool parse_int(const redisReply* reply, int64_t* out) {
  if (reply->type == REDIS_REPLY_INTEGER) {
    *out = reply->integer;
    return true;
  }
  if (reply->type != REDIS_REPLY_STRING) {
    return false;
  }
  std::string text(reply->str, reply->len);
  char* end = nullptr;
  *out = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0';
}

// The counters in an HGETALL reply, or in an HMGET reply of `fields`.
std::vector<Counter> counters_of(const redisReply* reply, const std::vector<std::string>* fields) {
  std::vector<Counter> out;
  if (reply->type != REDIS_REPLY_ARRAY) {
    return out;
  }
  size_t step = fields ? 1 : 2;
  for (size_t i = 0; i + step - 1 < reply->elements; i += step) {
    const redisReply* value = reply->element[fields ? i : i + 1];
    std::string field =
        fields ? (*fields)[i] : std::string(reply->element[i]->str, reply->element[i]->len);
    Counter counter;
    if (!parse_int(value, &counter.value) || !split_job_key(field, &counter.topic, &counter.name)) {
      continue;
    }
    out.push_back(std::move(counter));
  }
  return out;
}

// What one pass reads: every topic, or one topic's fields; the commands of
// one shard's pass.
struct StatsPlan {
  ShardSet set;
  int64_t deadline_ms = 0;
  std::optional<std::string> only;
  bool with_series = false;
  std::vector<std::string> state_fields, event_fields;
  std::vector<std::string> days;
  std::vector<std::string> names;  // topics to show even with nothing counted

  std::vector<std::string> read(const std::string& key,
                                const std::vector<std::string>& fields) const {
    std::vector<std::string> argv = {only ? "HMGET" : "HGETALL", key};
    if (only) {
      argv.insert(argv.end(), fields.begin(), fields.end());
    }
    return argv;
  }
};

// One shard's counters, as read: [0] counts, [1] totals, then the 60 minutes
// ending at `minute` (the shard's clock) and the plan's days.
struct ShardCounters {
  int64_t minute = 0;
  std::vector<std::vector<Counter>> hashes;
};

// Reads the shard's counter hashes, pipelined: one round trip. A shard lost
// midway is left out whole.
void read_counters(const std::shared_ptr<const StatsPlan>& plan, size_t index, int64_t minute,
                   const std::function<void(Result<ShardCounters>)>& done) {
  std::vector<std::vector<std::string>> commands = {plan->read(keys::counts(), plan->state_fields),
                                                    plan->read(keys::totals(), plan->event_fields)};
  if (plan->with_series) {
    for (int64_t m = minute - kMinutes + 1; m <= minute; ++m) {
      commands.push_back(plan->read(keys::minute(m), plan->event_fields));
    }
    for (const auto& day : plan->days) {
      commands.push_back(plan->read(keys::stats(day), plan->event_fields));
    }
  }
  struct Reading {
    ShardCounters counters;
    size_t left = 0;
    std::optional<Status> failed;
  };
  auto reading = std::make_shared<Reading>();
  reading->counters.minute = minute;
  reading->counters.hashes.resize(commands.size());
  reading->left = commands.size();
  for (size_t k = 0; k < commands.size(); ++k) {
    const std::vector<std::string>* fields = !plan->only ? nullptr
                                             : k == 0    ? &plan->state_fields
                                                         : &plan->event_fields;
    ask(plan->set, index, commands[k], plan->deadline_ms,
        [reading, k, fields, done](Result<const redisReply*> reply) {
          if (!reply.is_ok()) {
            if (!reading->failed) {
              reading->failed = reply.status();
            }
          } else {
            reading->counters.hashes[k] = counters_of(*reply, fields);
          }
          if (--reading->left > 0) {
            return;
          }
          if (reading->failed) {
            return done(*reading->failed);
          }
          done(std::move(reading->counters));
        });
  }
}

// The series need the shard's minute first (Redis TIME): two round trips.
void read_shard(const std::shared_ptr<const StatsPlan>& plan, size_t index,
                std::function<void(Result<ShardCounters>)> done) {
  if (!plan->with_series) {
    return read_counters(plan, index, 0, done);
  }
  ask(plan->set, index, {"TIME"}, plan->deadline_ms,
      [plan, index, done](Result<const redisReply*> reply) {
        int64_t seconds = 0;
        if (!reply.is_ok()) {
          return done(reply.status());
        }
        const redisReply* r = *reply;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            !parse_int(r->element[0], &seconds)) {
          return done(Status(Code::kInternal, "unexpected reply to TIME from redis shard " +
                                                  plan->set.names[index]));
        }
        read_counters(plan, index, seconds / 60, done);
      });
}

// Sums what the shards answered, per topic.
class StatsSum {
 public:
  StatsSum(const StatsPlan& plan, std::optional<int64_t> minute) : plan_(plan), minute_(minute) {
    if (plan.only) {
      topic(*plan.only);
    }
    for (const auto& name : plan.names) {
      topic(name);
    }
  }

  void add(const ShardCounters& shard) {
    for (const Counter& c : shard.hashes[0]) {
      if (int64_t* slot = state_slot(topic(c.topic).now, c.name)) {
        *slot += c.value;
      }
    }
    for (const Counter& c : shard.hashes[1]) {
      if (int64_t* slot = event_slot(topic(c.topic).total, c.name)) {
        *slot += c.value;
      }
    }
    if (!plan_.with_series) {
      return;
    }
    // Each shard's minutes are its own clock's; rows go by minute number
    // into the window of the first shard that answered.
    const size_t minutes = static_cast<size_t>(kMinutes);
    for (size_t i = 0; i < minutes + plan_.days.size(); ++i) {
      for (const Counter& c : shard.hashes[2 + i]) {
        TopicStats& stats = topic(c.topic);
        EventCounts* slot = nullptr;
        if (i < minutes) {
          int64_t row =
              shard.minute - kMinutes + 1 + static_cast<int64_t>(i) - (*minute_ - kMinutes + 1);
          if (row < 0 || row >= kMinutes) {
            continue;
          }
          slot = &stats.per_minute[static_cast<size_t>(row)].second;
        } else {
          slot = &stats.per_day[i - minutes].second;
        }
        if (int64_t* value = event_slot(*slot, c.name)) {
          *value += c.value;
        }
      }
    }
  }

  std::vector<TopicStats> take(const std::vector<std::string>& unreachable) {
    std::vector<TopicStats> out;
    for (auto& [name, stats] : topics_) {
      stats.unreachable_shards = unreachable;
      out.push_back(std::move(stats));
    }
    return out;
  }

 private:
  TopicStats& topic(const std::string& name) {
    auto found = topics_.find(name);
    if (found != topics_.end()) {
      return found->second;
    }
    TopicStats& stats = topics_[name];
    stats.topic = name;
    if (plan_.with_series) {
      for (int64_t m = *minute_ - kMinutes + 1; m <= *minute_; ++m) {
        stats.per_minute.emplace_back(m, EventCounts{});
      }
      for (const auto& day : plan_.days) {
        stats.per_day.emplace_back(day, EventCounts{});
      }
    }
    return stats;
  }

  const StatsPlan& plan_;
  std::optional<int64_t> minute_;
  std::map<std::string, TopicStats> topics_;
};

// Every shard at once; then the sum over those that answered.
void run_pass(std::shared_ptr<StatsPlan> plan,
              std::function<void(Result<std::vector<TopicStats>>)> done) {
  if (plan->with_series) {
    plan->days = last_days(now_ms());
  }
  if (plan->only) {
    for (const char* letter : kStateLetters) {
      plan->state_fields.push_back(*plan->only + ":" + letter);
    }
    for (const char* event : kEvents) {
      plan->event_fields.push_back(*plan->only + ":" + event);
    }
  }
  std::shared_ptr<const StatsPlan> fixed = plan;
  fan_out<ShardCounters>(
      fixed->set.size(),
      [fixed](size_t index, std::function<void(Result<ShardCounters>)> answer) {
        read_shard(fixed, index, std::move(answer));
      },
      [fixed, done = std::move(done)](std::vector<Result<ShardCounters>> parts) {
        std::vector<size_t> unreachable;
        std::optional<int64_t> minute;
        for (size_t i = 0; i < parts.size(); ++i) {
          if (!parts[i].is_ok()) {
            unreachable.push_back(i);
          } else if (!minute) {
            minute = parts[i]->minute;
          }
        }
        if (!minute) {
          return done(Status(Code::kUnavailable, "no Redis shard can be reached (" +
                                                     joined_names(fixed->set, unreachable) + ")"));
        }
        StatsSum sum(*fixed, minute);
        for (const auto& part : parts) {
          if (part.is_ok()) {
            sum.add(*part);
          }
        }
        std::vector<std::string> names;
        for (size_t index : unreachable) {
          names.push_back(fixed->set.names[index]);
        }
        done(sum.take(names));
      });
}

void put_events(Json& out, const EventCounts& c) {
  out["added"] = c.added;
  out["delivered"] = c.delivered;
  out["failed"] = c.failed;
  out["dead"] = c.dead;
  out["deleted"] = c.deleted;
  out["expired"] = c.expired;
  out["requeued"] = c.requeued;
  out["duplicate"] = c.duplicate;
  out["updated"] = c.updated;
  out["ttl_expired"] = c.ttl_expired;
  out["late_dropped"] = c.late_dropped;
  out["window_held"] = c.window_held;
}

}  // namespace

void topic_stats(const ShardSet& shards, const std::string& topic, bool with_series,
                 std::function<void(Result<TopicStats>)> done) {
  auto plan = std::make_shared<StatsPlan>();
  plan->set = shards;
  plan->deadline_ms = deadline_after(shards.timeout_ms);
  plan->only = topic;
  plan->with_series = with_series;
  run_pass(std::move(plan), [done = std::move(done)](Result<std::vector<TopicStats>> all) {
    if (!all.is_ok()) {
      return done(all.status());
    }
    done(std::move(all->front()));
  });
}

void all_topic_stats(const ShardSet& shards, const std::vector<std::string>& topics,
                     bool with_series, std::function<void(Result<std::vector<TopicStats>>)> done) {
  auto plan = std::make_shared<StatsPlan>();
  plan->set = shards;
  plan->deadline_ms = deadline_after(shards.timeout_ms);
  plan->with_series = with_series;
  plan->names = topics;
  run_pass(std::move(plan), std::move(done));
}

Json to_json(const StateCounts& c) {
  return Json{{"delayed", c.delayed},   {"ready", c.ready}, {"working", c.working},
              {"retrying", c.retrying}, {"dead", c.dead},   {"waiting", c.waiting}};
}

Json to_json(const EventCounts& counts) {
  Json out = Json::object();
  put_events(out, counts);
  return out;
}

Json to_json(const TopicStats& stats) {
  Json out{{"topic", stats.topic},
           {"now", to_json(stats.now)},
           {"total", to_json(stats.total)},
           {"unreachable_shards", stats.unreachable_shards}};
  if (!stats.per_minute.empty() || !stats.per_day.empty()) {
    Json minutes = Json::array();
    for (const auto& [minute, counts] : stats.per_minute) {
      Json row{{"minute", minute}, {"at_ms", minute * 60000}};
      put_events(row, counts);
      minutes.push_back(std::move(row));
    }
    Json days = Json::array();
    for (const auto& [day, counts] : stats.per_day) {
      Json row{{"day", day}};
      put_events(row, counts);
      days.push_back(std::move(row));
    }
    out["per_minute"] = std::move(minutes);
    out["per_day"] = std::move(days);
  }
  return out;
}

}  // namespace dq
