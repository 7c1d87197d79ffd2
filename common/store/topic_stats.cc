// topic_stats and all_topic_stats: one pipelined pass per shard over the
// counter hashes, summed per topic. For one topic the hashes are read with
// HMGET of its fields; for all topics with HGETALL.
#include "common/store/topic_stats.h"

#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>

#include "common/core/clock.h"
#include "common/store/keys.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

constexpr int64_t kMinutes = 60;
constexpr int kDays = 30;

const char* const kStateLetters[] = {"d", "r", "w", "y", "x", "h"};
const char* const kEvents[] = {"added",   "delivered", "failed",   "dead",
                               "deleted", "expired",   "requeued", "duplicate"};

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
  if (letter == "h") {
    return &counts.held;
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

// What one pass reads: every topic, or one topic's fields.
class StatsPass {
 public:
  StatsPass(std::optional<std::string> only, bool with_series)
      : only_(std::move(only)), with_series_(with_series) {
    if (with_series_) {
      days_ = last_days(now_ms());
    }
    if (only_) {
      for (const char* letter : kStateLetters) {
        state_fields_.push_back(*only_ + ":" + letter);
      }
      for (const char* event : kEvents) {
        event_fields_.push_back(*only_ + ":" + event);
      }
      topic(*only_);
    }
  }

  void add_topic(const std::string& name) { topic(name); }

  Status run(JobStore& store) {
    std::vector<std::string> unreachable;
    bool any = false;
    for (size_t i = 0; i < store.shard_count(); ++i) {
      RedisConnection& shard = store.shard(i);
      if (with_series_ && !minute_ && !read_minute(shard)) {
        unreachable.push_back(shard.address().name());
        continue;
      }
      if (!read_shard(shard)) {
        unreachable.push_back(shard.address().name());
        continue;
      }
      any = true;
    }
    if (!any) {
      std::string names;
      for (const auto& name : unreachable) {
        names += (names.empty() ? "" : ", ") + name;
      }
      return Status(Code::kUnavailable, "no Redis shard can be reached (" + names + ")");
    }
    for (auto& [name, stats] : topics_) {
      stats.unreachable_shards = unreachable;
    }
    return Status::ok();
  }

  std::vector<TopicStats> take() {
    std::vector<TopicStats> out;
    for (auto& [name, stats] : topics_) {
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
    if (with_series_) {
      // The minute is known once the first shard answered TIME; blanks made
      // before that are filled in by read_minute().
      if (minute_) {
        for (int64_t m = *minute_ - kMinutes + 1; m <= *minute_; ++m) {
          stats.per_minute.emplace_back(m, EventCounts{});
        }
      }
      for (const auto& day : days_) {
        stats.per_day.emplace_back(day, EventCounts{});
      }
    }
    return stats;
  }

  // The current unix minute by the shard's clock (Redis TIME).
  bool read_minute(RedisConnection& shard) {
    auto reply = shard.command({"TIME"});
    if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != 2) {
      return false;
    }
    int64_t seconds = 0;
    if (!parse_int((*reply)->element[0], &seconds)) {
      return false;
    }
    minute_ = seconds / 60;
    for (auto& [name, stats] : topics_) {
      for (int64_t m = *minute_ - kMinutes + 1; m <= *minute_; ++m) {
        stats.per_minute.emplace_back(m, EventCounts{});
      }
    }
    return true;
  }

  std::vector<std::string> read(const std::string& key, const std::vector<std::string>& fields) {
    std::vector<std::string> argv = {only_ ? "HMGET" : "HGETALL", key};
    if (only_) {
      argv.insert(argv.end(), fields.begin(), fields.end());
    }
    return argv;
  }

  // Reads the shard's counters in one round trip; adds them only when every
  // reply came (a shard lost midway is left out whole).
  bool read_shard(RedisConnection& shard) {
    std::vector<std::vector<std::string>> commands = {read(keys::counts(), state_fields_),
                                                      read(keys::totals(), event_fields_)};
    if (with_series_) {
      for (int64_t m = *minute_ - kMinutes + 1; m <= *minute_; ++m) {
        commands.push_back(read(keys::minute(m), event_fields_));
      }
      for (const auto& day : days_) {
        commands.push_back(read(keys::stats(day), event_fields_));
      }
    }
    auto replies = shard.command_all(commands);
    for (const auto& reply : replies) {
      if (!reply.is_ok()) {
        return false;
      }
    }
    const auto* states = only_ ? &state_fields_ : nullptr;
    const auto* events = only_ ? &event_fields_ : nullptr;
    for (const Counter& c : counters_of(replies[0]->get(), states)) {
      if (int64_t* slot = state_slot(topic(c.topic).now, c.name)) {
        *slot += c.value;
      }
    }
    for (const Counter& c : counters_of(replies[1]->get(), events)) {
      if (int64_t* slot = event_slot(topic(c.topic).total, c.name)) {
        *slot += c.value;
      }
    }
    if (!with_series_) {
      return true;
    }
    const size_t minutes = static_cast<size_t>(kMinutes);
    for (size_t i = 0; i < minutes + days_.size(); ++i) {
      for (const Counter& c : counters_of(replies[2 + i]->get(), events)) {
        TopicStats& stats = topic(c.topic);
        EventCounts& slot =
            i < minutes ? stats.per_minute[i].second : stats.per_day[i - minutes].second;
        if (int64_t* value = event_slot(slot, c.name)) {
          *value += c.value;
        }
      }
    }
    return true;
  }

  std::optional<std::string> only_;
  bool with_series_;
  std::vector<std::string> state_fields_, event_fields_;
  std::optional<int64_t> minute_;
  std::vector<std::string> days_;
  std::map<std::string, TopicStats> topics_;
};

void put_events(Json& out, const EventCounts& c) {
  out["added"] = c.added;
  out["delivered"] = c.delivered;
  out["failed"] = c.failed;
  out["dead"] = c.dead;
  out["deleted"] = c.deleted;
  out["expired"] = c.expired;
  out["requeued"] = c.requeued;
  out["duplicate"] = c.duplicate;
}

}  // namespace

Result<TopicStats> topic_stats(JobStore& store, const std::string& topic, bool with_series) {
  StatsPass pass(topic, with_series);
  Status status = pass.run(store);
  if (!status.is_ok()) {
    return status;
  }
  auto all = pass.take();
  return std::move(all.front());
}

Result<std::vector<TopicStats>> all_topic_stats(JobStore& store,
                                                const std::vector<std::string>& topics,
                                                bool with_series) {
  StatsPass pass(std::nullopt, with_series);
  for (const auto& name : topics) {
    pass.add_topic(name);
  }
  Status status = pass.run(store);
  if (!status.is_ok()) {
    return status;
  }
  return pass.take();
}

Json to_json(const StateCounts& c) {
  return Json{{"delayed", c.delayed},   {"ready", c.ready}, {"working", c.working},
              {"retrying", c.retrying}, {"dead", c.dead},   {"held", c.held}};
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
