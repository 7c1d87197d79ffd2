// A topic's settings as they are written: one table of fields (their JSON
// names, the `dqctl topic add|set` flag of each and how a value is read),
// used by every writer of topics: the HTTP API's PUT and PATCH
// /v1/topics/{topic}, the admin page's topic form and dqctl. dqctl turns its
// flags into the same JSON object (topic_flag_to_json), so a value is checked
// by one piece of code whichever way it came. A topic as JSON is
// common/registry/topic_json.h; the whole write (URL rules, versions, the
// shared registry) is common/registry/topic_writes.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq {

// Sets the fields present in `fields` (a JSON object) on *topic. Unknown keys
// are refused, "name" must be the topic's own, and the fields a topic shows
// but no one sets ("created_at_ms", "updated_at_ms", "signing_keys",
// "version") are ignored, so an object sent back as read is accepted.
// "signing_overlap_s" is how long a replaced signing key is still sent.
// kInvalid "field: why" on a value of the wrong type; the ranges are
// validate_topic's (common/registry/registry.h).
Status apply_topic_fields(const Json& fields, Topic* topic, int64_t now_ms);

// The JSON names of the fields apply_topic_fields sets, in table order.
std::vector<std::string> topic_field_names();

// True when `flag` is one of `dqctl topic add|set`'s field flags
// ("--callback", "--timeout-ms", ...).
bool is_topic_flag(const std::string& flag);
// Puts the flag's value into *fields under its JSON name, read as the flag
// reads it: integers as numbers, "on"/"off" as a boolean, "off" as "" for
// --dead-callback and the signing flags, --overlap's duration (90s, 30m, 24h,
// 7d) as "signing_overlap_s". kInvalid naming the flag when it cannot be read.
Status topic_flag_to_json(const std::string& flag, const std::string& value, Json* fields);

// "30m", "24h", "7d", "90s" or plain seconds, in ms; nullopt when unreadable.
std::optional<int64_t> parse_duration_ms(const std::string& text);

// The version an edit names: the body's "version" and/or the If-Match header
// (3 or "3"); nullopt when neither is given; kInvalid when either is not a
// whole number or they differ.
Result<std::optional<int64_t>> edit_version(const Json& body, const std::string& if_match);

// "callback_url: must start with http://" -> "callback_url" ("" when none).
std::string field_of(const Status& status);

}  // namespace dq
