// What the server's answers mean to the client: an HTTP status as an
// ErrorCode, an answer as an Error, and the JSON fields of states and counts
// as the client's types (dq/client.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dq/client.h"
#include "http_transport.h"

namespace dq::client {

ErrorCode code_for_status(long status);

// The answer as an Error: its status's code and the server's message.
Error error_from_answer(const HttpAnswer& answer, const std::string& server);

// An answer that does not say what it should (kind Protocol), `what` saying how.
Error protocol_error(const std::string& what, const HttpAnswer& answer, const std::string& server);

// "delayed", ... -> JobState::Delayed, ...; Unknown for any other name.
JobState state_from_name(const std::string& name);

// Counts from a JSON object (a missing key counts 0; not an object: all 0).
StateCounts state_counts_of(const nlohmann::json& json);
EventCounts event_counts_of(const nlohmann::json& json);

// The strings of a JSON array (other elements skipped; not an array: none).
std::vector<std::string> strings_of(const nlohmann::json& json);

// A topic answer (200 or 201) as TopicSettings; Protocol when it is not one.
Result<TopicSettings> topic_settings_of(const HttpAnswer& answer, const std::string& server);

}  // namespace dq::client
