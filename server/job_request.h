// Turning a client's request into a job: validation shared by the HTTP API
// and the legacy protocol, so both accept and refuse exactly the same input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/config.h"
#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/topic_cache.h"
#include "common/store/add_request.h"

namespace dq {

// `job` is {"id": "...", "body": <any JSON>, "delay": seconds} or with "at":
// any time form of common/core/time_text.h (server local time unless the text
// carries an offset, or "tz" names the zone). Neither: the
// topic's default delay. Optional "ttl" (seconds after the job is due) or
// "expire_at" (a time form, read as at is): after it the job is never
// delivered; neither: the topic's ttl. `job_text` is JSON text with a top-level "body"
// member equal to job's (the text `job` was parsed from, or the legacy
// request it was built from): the body is stored as that member's raw text,
// byte for byte. Errors: kInvalid (400), kNotFound for an unknown topic
// (404), kTooLarge (413). An offline topic takes jobs; they wait.
Result<AddRequest> build_add_request(const std::string& topic, const Json& job,
                                     std::string_view job_text, TopicCache& topics,
                                     const Config& config, int64_t now_ms);

// An add's "after": an array of at most kMaxAfter {"topic", "id"} objects
// (common/store/dependencies.h), each a registered topic and a valid id,
// none naming the job itself (topic/id). kInvalid otherwise, with which
// entry and why.
Result<std::vector<JobRef>> after_of(const Json& after, const std::string& topic,
                                     const std::string& id, TopicCache& topics);

// An add's or update's time members, nullptr when not given.
struct JobTimes {
  const Json* delay = nullptr;
  const Json* at = nullptr;
  // The IANA zone an `at` (and an `expire_at`) without an offset is read in
  // ("2026-03-29 09:00" + "Europe/Paris"), by the rule of
  // common/core/time_zone.h; kInvalid for an unknown zone, or tz without at.
  const Json* tz = nullptr;
  const Json* ttl = nullptr;
  const Json* expire_at = nullptr;
};

// The checks after the request's shape (build_add_request's last ones):
// the body's size, then the due time from `delay` or `at` or the topic's
// default, then the expiry from `ttl` or `expire_at` or the topic's ttl.
// The topic and id are already checked.
Result<AddRequest> add_request_of(const std::string& topic, std::string id, std::string_view body,
                                  const JobTimes& times, TopicCache& topics, const Config& config,
                                  int64_t now_ms);

// A PUT's fields -> the update of topic/id: `fields` is an object with any
// of body, delay or at (the add's forms; not delay and at both; tz with at),
// and optionally ttl or expire_at (else the job keeps its expiry), parsed from
// `text` (the body is kept as its raw member text). add_due is what the add
// would use: the given time, or the topic's default delay. Errors as for
// build_add_request; an object with none of the three is kInvalid.
Result<UpdateRequest> build_update_request(const std::string& topic, const std::string& id,
                                           const Json& fields, std::string_view text,
                                           TopicCache& topics, const Config& config,
                                           int64_t now_ms);

// The id of an add sent as a JSON number, from the number's text as sent: an
// integer is kept exactly as written ("42", "-7", digits past 64 bits too);
// one with a fraction or an exponent (1.5, 1e400) is refused (kInvalid),
// since no text of it is the one the producer meant for sure. (The legacy
// port keeps the PHP queue's rule instead: server/legacy_fields.h.)
Result<std::string> id_of_number(std::string_view raw);

// Topic must be valid and known (online or offline); id must be valid. For get/del.
Status check_topic_and_id(const std::string& topic, const std::string& id, TopicCache& topics);
Status check_topic(const std::string& topic, TopicCache& topics);
// kInvalid, saying what an id may be, unless valid_id(id).
Status check_id(const std::string& id);

}  // namespace dq
