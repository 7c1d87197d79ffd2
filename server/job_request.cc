#include "server/job_request.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/core/clock.h"
#include "common/core/json_span.h"
#include "common/core/time_text.h"
#include "common/registry/delivery_rules.h"
#include "common/store/dependencies.h"
#include "common/store/job.h"

namespace dq {
namespace {

constexpr int64_t kMaxDelayMs = 10LL * 366 * 24 * 3600 * 1000;  // ten years

Result<DueTime> due_from_delay(const Json& delay) {
  if (!delay.is_number()) {
    return Status(Code::kInvalid, "delay must be a number of seconds");
  }
  double seconds = delay.get<double>();
  if (!std::isfinite(seconds) || seconds < 0) {
    return Status(Code::kInvalid, "delay must not be negative");
  }
  if (seconds * 1000 > static_cast<double>(kMaxDelayMs)) {
    return Status(Code::kInvalid, "delay is longer than ten years");
  }
  return DueTime{true, static_cast<int64_t>(std::llround(seconds * 1000))};
}

// A fixed time is kept as given; one in the past is due at once (as the PHP
// queue did), as promote compares it with Redis's clock. The forms are those
// of common/core/time_text.h, shared with the legacy port's fix_time; a wall
// time without an offset is read in `zone` (nullptr: the server's zone).
Result<DueTime> due_from_at(const Json& at, const TimeZone* zone, int64_t now_ms) {
  auto due = parse_time_value(at, zone);
  if (!due.is_ok()) {
    return Status(Code::kInvalid, "at: " + due.status().message());
  }
  int64_t ahead = due->relative ? due->ms : due->ms - now_ms;
  if (ahead > kMaxDelayMs) {
    return Status(Code::kInvalid, "at is more than ten years ahead");
  }
  return *due;
}

bool is_time_member(const std::string& key) {
  return key == "delay" || key == "at" || key == "tz" || key == "ttl" || key == "expire_at";
}

JobTimes job_times_of(const Json& object) {
  auto member = [&object](const char* name) -> const Json* {
    auto found = object.find(name);
    return found == object.end() ? nullptr : &*found;
  };
  return {member("delay"), member("at"), member("tz"), member("ttl"), member("expire_at")};
}

// When the job expires: its ttl (seconds after its due time) or expire_at
// (a time form, read in the zone at is read in; after the due time), else
// the topic's ttl, else never.
Result<JobExpiry> expiry_of(const JobTimes& times, DueTime due, const TimeZone* zone,
                            int64_t topic_ttl_s, int64_t now_ms) {
  if (times.ttl != nullptr && times.expire_at != nullptr) {
    return Status(Code::kInvalid, "give ttl or expire_at, not both");
  }
  if (times.ttl != nullptr) {
    double seconds = times.ttl->is_number() ? times.ttl->get<double>() : -1;
    if (!std::isfinite(seconds) || seconds <= 0 || seconds > static_cast<double>(kMaxJobTtlS)) {
      return Status(Code::kInvalid, "ttl must be a number of seconds from 0.001 to " +
                                        std::to_string(kMaxJobTtlS) +
                                        " (ten years): how long after its due time the job may "
                                        "still be delivered");
    }
    return JobExpiry{JobExpiry::Kind::kAfterDue,
                     std::max<int64_t>(1, static_cast<int64_t>(std::llround(seconds * 1000)))};
  }
  if (times.expire_at != nullptr) {
    auto when = parse_time_value(*times.expire_at, zone);
    if (!when.is_ok()) {
      return Status(Code::kInvalid, "expire_at: " + when.status().message());
    }
    int64_t expires_ms = when->relative ? now_ms + when->ms : when->ms;
    int64_t due_ms = due.relative ? now_ms + due.ms : std::max(due.ms, now_ms);
    if (expires_ms <= due_ms) {
      return Status(Code::kInvalid, "expire_at " + std::to_string(expires_ms) +
                                        " (epoch ms) is not after the job's due time " +
                                        std::to_string(due_ms) + ": it would never be delivered");
    }
    return JobExpiry{JobExpiry::Kind::kAt, expires_ms};
  }
  if (topic_ttl_s > 0) {
    return JobExpiry{JobExpiry::Kind::kAfterDue, topic_ttl_s * 1000};
  }
  return JobExpiry{};
}

}  // namespace

Status check_topic(const std::string& topic, TopicCache& topics) {
  if (!valid_topic(topic)) {
    return Status(Code::kInvalid,
                  "topic '" + topic + "' is not valid: use 1-64 of A-Z a-z 0-9 _ . -");
  }
  // An offline topic only pauses delivery: its jobs can still be added, read
  // and deleted (docs/decisions.md).
  if (topics.find_or_reload(topic) == nullptr) {
    return Status(Code::kNotFound, "unknown topic '" + topic + "'");
  }
  return Status::ok();
}

Status check_id(const std::string& id) {
  if (valid_id(id)) {
    return Status::ok();
  }
  // A long id is not echoed whole; the reply's JSON replaces bytes that are not UTF-8.
  std::string shown =
      id.size() <= 64 ? "'" + id + "'" : "of " + std::to_string(id.size()) + " bytes";
  return Status(Code::kInvalid, "id " + shown +
                                    " is not valid: an id is 1-256 bytes of UTF-8 text "
                                    "without control characters");
}

Result<std::string> id_of_number(std::string_view raw) {
  std::string_view digits = raw.substr(!raw.empty() && raw.front() == '-' ? 1 : 0);
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
    return std::string(raw);
  }
  std::string shown(raw.substr(0, 64));
  return Status(Code::kInvalid, "id " + shown +
                                    " is a JSON number with a fraction or an exponent; an id is "
                                    "kept exactly as sent, so send this one as a string (\"" +
                                    shown + "\")");
}

Status check_topic_and_id(const std::string& topic, const std::string& id, TopicCache& topics) {
  Status status = check_topic(topic, topics);
  if (!status.is_ok()) {
    return status;
  }
  return check_id(id);
}

Result<AddRequest> build_add_request(const std::string& topic, const Json& job,
                                     std::string_view job_text, TopicCache& topics,
                                     const Config& config, int64_t now_ms) {
  if (!job.is_object()) {
    return Status(Code::kInvalid, "a job must be a JSON object with id and body");
  }
  auto id_field = job.find("id");
  if (id_field == job.end() || !(id_field->is_string() || id_field->is_number())) {
    return Status(Code::kInvalid, "id is required and must be a string or a number");
  }
  std::string id;
  if (id_field->is_string()) {
    id = id_field->get<std::string>();
  } else {
    std::optional<std::string_view> raw = json_member_span(job_text, "id");
    auto number = raw ? id_of_number(*raw) : Result<std::string>(Status(Code::kInternal, "no id"));
    if (!number.is_ok()) {
      return number.status();
    }
    id = std::move(*number);
  }
  Status status = check_topic_and_id(topic, id, topics);
  if (!status.is_ok()) {
    return status;
  }
  for (const auto& item : job.items()) {
    if (item.key() != "id" && item.key() != "body" && item.key() != "after" &&
        !is_time_member(item.key())) {
      return Status(Code::kInvalid,
                    "unknown field '" + item.key() +
                        "' (expected id, body, delay, at, tz, ttl, expire_at or after)");
    }
  }
  std::vector<JobRef> after;
  if (auto found = job.find("after"); found != job.end()) {
    auto refs = after_of(*found, topic, id, topics);
    if (!refs.is_ok()) {
      return refs.status();
    }
    after = std::move(*refs);
  }
  if (job.find("body") == job.end()) {
    return Status(Code::kInvalid, "body is required (any JSON value)");
  }
  std::optional<std::string_view> body = json_member_span(job_text, "body");
  if (!body) {
    return Status(Code::kInternal, "the job's JSON text has no body member");
  }
  auto built =
      add_request_of(topic, std::move(id), *body, job_times_of(job), topics, config, now_ms);
  if (built.is_ok()) {
    built->after = std::move(after);
  }
  return built;
}

Result<std::vector<JobRef>> after_of(const Json& after, const std::string& topic,
                                     const std::string& id, TopicCache& topics) {
  const std::string shape =
      "after must be an array of {\"topic\": ..., \"id\": ...} objects: the jobs this one "
      "waits for";
  if (!after.is_array()) {
    return Status(Code::kInvalid, shape);
  }
  if (after.size() > kMaxAfter) {
    return Status(Code::kInvalid, "after names " + std::to_string(after.size()) +
                                      " jobs; a job waits for at most " +
                                      std::to_string(kMaxAfter));
  }
  std::vector<JobRef> refs;
  for (size_t i = 0; i < after.size(); ++i) {
    const Json& entry = after[i];
    const std::string where = "after[" + std::to_string(i) + "]";
    if (!entry.is_object()) {
      return Status(Code::kInvalid, where + ": " + shape);
    }
    for (const auto& item : entry.items()) {
      if (item.key() != "topic" && item.key() != "id") {
        return Status(Code::kInvalid,
                      where + ": unknown field '" + item.key() + "' (expected topic and id)");
      }
    }
    auto t = entry.find("topic");
    auto d = entry.find("id");
    if (t == entry.end() || !t->is_string() || d == entry.end() ||
        !(d->is_string() || d->is_number_integer())) {
      return Status(Code::kInvalid, where + ": topic (a string) and id (a string) are required");
    }
    JobRef ref{t->get<std::string>(), d->is_string() ? d->get<std::string>() : d->dump()};
    if (Status known = check_topic(ref.topic, topics); !known.is_ok()) {
      return Status(known.code() == Code::kNotFound ? Code::kInvalid : known.code(),
                    where + ": " + known.message());
    }
    if (Status valid = check_id(ref.id); !valid.is_ok()) {
      return Status(Code::kInvalid, where + ": " + valid.message());
    }
    if (ref.topic == topic && ref.id == id) {
      return Status(Code::kInvalid,
                    where + ": a job cannot wait for itself (" + topic + "/" + id + ")");
    }
    refs.push_back(std::move(ref));
  }
  return refs;
}

namespace {

// The zone an add's `at` is read in: its `tz`, if any (checked), else the
// topic's (checked when it was set; a zone the tz database lost since is
// the server's zone rather than a refusal of every add).
Result<std::optional<TimeZone>> zone_of_request(const Json* tz, const Json* at,
                                                const std::string& topic_tz) {
  if (tz == nullptr) {
    if (at == nullptr || topic_tz.empty()) {
      return std::optional<TimeZone>();
    }
    auto zone = TimeZone::find(topic_tz);
    return zone.is_ok() ? std::optional<TimeZone>(std::move(*zone)) : std::optional<TimeZone>();
  }
  if (!tz->is_string()) {
    return Status(Code::kInvalid, "tz must be an IANA time zone name such as \"Europe/Paris\"");
  }
  if (at == nullptr) {
    return Status(Code::kInvalid, "tz applies to at: give at with it (a delay has no time zone)");
  }
  const std::string& name = tz->get_ref<const std::string&>();
  if (name.empty()) {
    return std::optional<TimeZone>();  // the server's zone, as without tz
  }
  auto zone = TimeZone::find(name);
  if (!zone.is_ok()) {
    return Status(Code::kInvalid, "tz: " + zone.status().message());
  }
  return std::optional<TimeZone>(std::move(*zone));
}

}  // namespace

Result<AddRequest> add_request_of(const std::string& topic, std::string id, std::string_view body,
                                  const JobTimes& times, TopicCache& topics, const Config& config,
                                  int64_t now_ms) {
  const Json* delay = times.delay;
  const Json* at = times.at;
  if (body.size() > config.max_body_bytes) {
    return Status(Code::kTooLarge,
                  "body is " + std::to_string(body.size()) + " bytes, over the limit of " +
                      std::to_string(config.max_body_bytes) + " ([server] max_body_bytes)");
  }
  if (delay != nullptr && at != nullptr) {
    return Status(Code::kInvalid, "give delay or at, not both");
  }
  const Topic* registered = topics.find(topic);
  Result<DueTime> due = DueTime{true, registered->default_delay_s * 1000};
  if (delay != nullptr) {
    due = due_from_delay(*delay);
  }
  auto zone = zone_of_request(times.tz, at != nullptr ? at : times.expire_at, registered->tz);
  if (!zone.is_ok()) {
    return zone.status();
  }
  if (at != nullptr) {
    due = due_from_at(*at, zone->has_value() ? &**zone : nullptr, now_ms);
  }
  if (!due.is_ok()) {
    return due.status();
  }
  auto expiry =
      expiry_of(times, *due, zone->has_value() ? &**zone : nullptr, registered->ttl, now_ms);
  if (!expiry.is_ok()) {
    return expiry.status();
  }
  AddRequest request;
  request.topic = topic;
  request.id = std::move(id);
  request.body.assign(body);
  request.due = *due;
  request.expiry = *expiry;
  return request;
}

}  // namespace dq

namespace dq {

Result<UpdateRequest> build_update_request(const std::string& topic, const std::string& id,
                                           const Json& fields, std::string_view text,
                                           TopicCache& topics, const Config& config,
                                           int64_t now_ms) {
  Status status = check_topic_and_id(topic, id, topics);
  if (!status.is_ok()) {
    return status;
  }
  if (!fields.is_object()) {
    return Status(Code::kInvalid,
                  "an update must be a JSON object with any of body, delay or at (and tz)");
  }
  for (const auto& item : fields.items()) {
    if (item.key() != "body" && !is_time_member(item.key())) {
      return Status(Code::kInvalid, "unknown field '" + item.key() +
                                        "' (expected body, delay, at, tz, ttl or expire_at)");
    }
  }
  auto body = fields.find("body");
  JobTimes times = job_times_of(fields);
  if (body == fields.end() && times.delay == nullptr && times.at == nullptr &&
      times.ttl == nullptr && times.expire_at == nullptr) {
    return Status(Code::kInvalid, "nothing to change: give body, delay, at, ttl or expire_at");
  }
  std::optional<std::string_view> body_text;
  if (body != fields.end()) {
    body_text = json_member_span(text, "body");
    if (!body_text) {
      return Status(Code::kInternal, "the update's JSON text has no body member");
    }
  }
  // The add's checks and defaults, for the job added when none is found.
  auto add = add_request_of(topic, id, body_text.value_or(std::string_view("null")), times, topics,
                            config, now_ms);
  if (!add.is_ok()) {
    return add.status();
  }
  UpdateRequest request;
  request.topic = topic;
  request.id = id;
  if (body_text) {
    request.body = std::string(*body_text);
  }
  if (times.delay != nullptr || times.at != nullptr) {
    request.due = add->due;
  }
  request.add_due = add->due;
  if (times.ttl != nullptr || times.expire_at != nullptr) {
    request.expiry = add->expiry;
  }
  request.add_expiry = add->expiry;
  return request;
}

}  // namespace dq
