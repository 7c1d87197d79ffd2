// Implements common/registry/topic_schedules.h.
#include "common/registry/topic_schedules.h"

#include <sodium.h>

#include <cstdlib>
#include <set>

#include "common/core/time_text.h"
#include "common/core/time_zone.h"

namespace dq {
namespace {

constexpr size_t kMaxSchedulesPerTopic = 100;
constexpr size_t kMaxBodyBytes = 64 * 1024;

void replace_all(std::string* text, const std::string& from, const std::string& to) {
  for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at)) {
    text->replace(at, from.size(), to);
    at += to.size();
  }
}

Status schedule_refused(const TopicSchedule& schedule, const std::string& why) {
  return Status(Code::kInvalid, "schedule '" + schedule.spec + "': " + why);
}

}  // namespace

bool TopicSchedule::operator==(const TopicSchedule& other) const {
  return spec == other.spec && id == other.id && tz == other.tz && body == other.body &&
         catch_up == other.catch_up && paused == other.paused &&
         created_at_ms == other.created_at_ms;
}

std::string new_schedule_id() {
  if (sodium_init() < 0) {
    std::abort();  // no randomness: nothing safe to name a schedule with
  }
  unsigned char raw[8];
  randombytes_buf(raw, sizeof(raw));
  char hex[sizeof(raw) * 2 + 1];
  sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
  return std::string("sch_") + hex;
}

std::string schedule_zone_name(const TopicSchedule& schedule, const std::string& topic_tz) {
  if (!schedule.tz.empty()) {
    return schedule.tz;
  }
  return topic_tz.empty() ? "UTC" : topic_tz;
}

Result<CronSpec> parse_schedule(const TopicSchedule& schedule, const std::string& topic_tz) {
  auto zone = TimeZone::find(schedule_zone_name(schedule, topic_tz));
  if (!zone.is_ok()) {
    return Status(Code::kInvalid, "tz: " + zone.status().message());
  }
  auto spec = CronSpec::parse(schedule.spec, *zone);
  if (!spec.is_ok()) {
    return Status(Code::kInvalid, "spec: " + spec.status().message());
  }
  return spec;
}

Status validate_schedules(const std::vector<TopicSchedule>& schedules,
                          const std::string& topic_tz) {
  if (schedules.size() > kMaxSchedulesPerTopic) {
    return Status(Code::kInvalid, "schedules: a topic holds at most " +
                                      std::to_string(kMaxSchedulesPerTopic) + " schedules");
  }
  std::set<std::string> specs;
  for (const TopicSchedule& schedule : schedules) {
    auto parsed = parse_schedule(schedule, topic_tz);
    if (!parsed.is_ok()) {
      return schedule_refused(schedule, parsed.status().message());
    }
    if (schedule.catch_up != "one" && schedule.catch_up != "none") {
      return schedule_refused(schedule,
                              "catch_up: must be one or none, not '" + schedule.catch_up + "'");
    }
    if (schedule.body.size() > kMaxBodyBytes) {
      return schedule_refused(schedule,
                              "body: at most " + std::to_string(kMaxBodyBytes) + " bytes");
    }
    Json body = Json::parse(tick_body(schedule.body, 0), nullptr, false);
    if (body.is_discarded() || !(body.is_object() || body.is_array())) {
      return schedule_refused(schedule, "body: must be a JSON object or array");
    }
    if (schedule.id.rfind("sch_", 0) != 0 || schedule.id.size() != 20) {
      return schedule_refused(schedule, "id: not a schedule id ('sch_' and 16 hex digits)");
    }
    if (!specs.insert(schedule.spec).second) {
      return schedule_refused(schedule, "the topic has this schedule already");
    }
  }
  return Status::ok();
}

std::string tick_body(const std::string& body_template, int64_t tick_ms) {
  std::string body = body_template;
  replace_all(&body, "{{tick}}", format_utc_instant(tick_ms));
  replace_all(&body, "{{tick_ms}}", std::to_string(tick_ms));
  return body;
}

Json schedule_to_json(const TopicSchedule& schedule, const std::string& topic_tz) {
  Json json = Json::object();
  json["spec"] = schedule.spec;
  json["id"] = schedule.id;
  json["tz"] = schedule.tz;
  json["zone"] = schedule_zone_name(schedule, topic_tz);
  Json body = Json::parse(schedule.body, nullptr, false);
  json["body"] = body.is_discarded() ? Json(schedule.body) : body;
  json["catch_up"] = schedule.catch_up;
  json["paused"] = schedule.paused;
  json["created_at_ms"] = schedule.created_at_ms;
  return json;
}

Json schedule_to_json(const TopicSchedule& schedule, const std::string& topic_tz, int64_t now_ms,
                      size_t count) {
  Json json = schedule_to_json(schedule, topic_tz);
  Json runs = Json::array();
  auto spec = parse_schedule(schedule, topic_tz);
  if (spec.is_ok() && !schedule.paused) {
    for (int64_t run : spec->next_runs(now_ms, count)) {
      runs.push_back(format_utc_instant(run));
    }
  }
  json["next_runs"] = std::move(runs);
  return json;
}

}  // namespace dq
