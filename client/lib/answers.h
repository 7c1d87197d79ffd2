// Helpers of the client library's calls: reading the server's answers
// (statuses, error bodies, JSON objects) into the library's types. Private to
// client/lib (not installed).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "dq/client.h"
#include "http_transport.h"

namespace dq::client {

using Json = nlohmann::json;

int64_t monotonic_ms();
std::string base_url_of(const std::string& server);
ErrorCode code_for_status(long status);
std::string server_message(const std::string& body, long status);
Error error_from_answer(const HttpAnswer& answer, const std::string& server);
Error protocol_error(const std::string& what, const HttpAnswer& answer, const std::string& server);
void put_when(const When& when, Json* job);
std::optional<std::string> job_text(const Json& fields, const std::string& body_json);
Error body_not_json(const std::string& id);
JobState state_from_name(const std::string& name);
StateCounts state_counts_of(const Json& json);
EventCounts event_counts_of(const Json& json);
std::vector<std::string> strings_of(const Json& json);
std::variant<Json, Error> object_answer(const HttpAnswer& answer, const std::string& server,
                                        const char* what,
                                        std::initializer_list<const char*> required);

}  // namespace dq::client
