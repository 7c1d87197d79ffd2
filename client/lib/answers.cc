// Implements answers.h, and the names of error codes and job states.
#include "answers.h"

#include <initializer_list>
#include <utility>

namespace dq::client {
namespace {

using Json = nlohmann::json;

// The server's {"error": "..."}, or the raw body when it is not that shape.
std::string server_message(const std::string& body, long status) {
  Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()) {
    std::string message = parsed["error"].get<std::string>();
    // 401/403 of a dq before "error" said why: {"error": "unauthorized", "reason": "..."}
    auto reason = parsed.find("reason");
    if (reason != parsed.end() && reason->is_string() &&
        message.find(reason->get<std::string>()) == std::string::npos) {
      message += ": " + reason->get<std::string>();
    }
    return message;
  }
  if (body.empty()) {
    return "HTTP " + std::to_string(status);
  }
  return body.size() > 200 ? body.substr(0, 200) + "..." : body;
}

// Each state with its name in the API, for both directions.
constexpr std::pair<JobState, const char*> kStateNames[] = {
    {JobState::Delayed, "delayed"}, {JobState::Ready, "ready"},
    {JobState::Working, "working"}, {JobState::Retrying, "retrying"},
    {JobState::Held, "held"},       {JobState::Dead, "dead"},
    {JobState::Done, "done"},       {JobState::Expired, "expired"},
    {JobState::Deleted, "deleted"}, {JobState::Waiting, "waiting"}};

// A counts struct read from a JSON object, each field from its key (0 when
// absent); all zero when the JSON is not an object.
template <typename Counts>
Counts counts_of(const Json& json,
                 std::initializer_list<std::pair<const char*, int64_t Counts::*>> fields) {
  Counts counts;
  if (json.is_object()) {
    for (const auto& [key, field] : fields) {
      counts.*field = json.value(key, int64_t{0});
    }
  }
  return counts;
}

}  // namespace

ErrorCode code_for_status(long status) {
  switch (status) {
    case 400:
      return ErrorCode::InvalidArgument;
    case 404:
      return ErrorCode::NotFound;
    case 409:
      return ErrorCode::Conflict;
    case 401:
      return ErrorCode::Unauthorized;
    case 403:
      return ErrorCode::Forbidden;
    case 413:
      return ErrorCode::TooLarge;
    case 503:
      return ErrorCode::Unavailable;
    case 504:
      return ErrorCode::OutcomeUnknown;
    default:
      return ErrorCode::Server;
  }
}

Error error_from_answer(const HttpAnswer& answer, const std::string& server) {
  return Error{code_for_status(answer.status), static_cast<int>(answer.status),
               server_message(answer.body, answer.status), server};
}

Error protocol_error(const std::string& what, const HttpAnswer& answer, const std::string& server) {
  return Error{ErrorCode::Protocol, static_cast<int>(answer.status), what, server};
}

JobState state_from_name(const std::string& name) {
  for (const auto& [state, state_name] : kStateNames) {
    if (name == state_name) {
      return state;
    }
  }
  return JobState::Unknown;
}

StateCounts state_counts_of(const Json& json) {
  using C = StateCounts;
  return counts_of<C>(json, {{"delayed", &C::delayed},
                             {"ready", &C::ready},
                             {"working", &C::working},
                             {"retrying", &C::retrying},
                             {"dead", &C::dead},
                             {"held", &C::held}});
}

EventCounts event_counts_of(const Json& json) {
  using C = EventCounts;
  return counts_of<C>(json, {{"added", &C::added},
                             {"delivered", &C::delivered},
                             {"failed", &C::failed},
                             {"dead", &C::dead},
                             {"deleted", &C::deleted},
                             {"expired", &C::expired},
                             {"requeued", &C::requeued},
                             {"duplicate", &C::duplicate},
                             {"updated", &C::updated},
                             {"ttl_expired", &C::ttl_expired},
                             {"late_dropped", &C::late_dropped}});
}

std::vector<std::string> strings_of(const Json& json) {
  std::vector<std::string> out;
  if (!json.is_array()) {
    return out;
  }
  for (const auto& item : json) {
    if (item.is_string()) {
      out.push_back(item.get<std::string>());
    }
  }
  return out;
}

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "InvalidArgument";
    case ErrorCode::NotFound:
      return "NotFound";
    case ErrorCode::Conflict:
      return "Conflict";
    case ErrorCode::TooLarge:
      return "TooLarge";
    case ErrorCode::Unavailable:
      return "Unavailable";
    case ErrorCode::Timeout:
      return "Timeout";
    case ErrorCode::OutcomeUnknown:
      return "OutcomeUnknown";
    case ErrorCode::Protocol:
      return "Protocol";
    case ErrorCode::Server:
      return "Server";
    case ErrorCode::StaleToken:
      return "StaleToken";
    case ErrorCode::Unauthorized:
      return "Unauthorized";
    case ErrorCode::Forbidden:
      return "Forbidden";
  }
  return "Unknown";
}

const char* job_state_name(JobState state) {
  for (const auto& [known, name] : kStateNames) {
    if (state == known) {
      return name;
    }
  }
  return "unknown";
}

Result<TopicSettings> topic_settings_of(const HttpAnswer& answer, const std::string& server) {
  Json reply = Json::parse(answer.body, nullptr, false);
  if (!reply.is_object() || !reply.contains("name") || !reply["name"].is_string()) {
    return protocol_error("topic: unexpected answer: " + answer.body, answer, server);
  }
  TopicSettings settings;
  settings.name = reply["name"].get<std::string>();
  settings.version = reply.value("version", int64_t{0});
  settings.created = answer.status == 201;
  settings.json = answer.body;
  return settings;
}

}  // namespace dq::client
