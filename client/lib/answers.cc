#include "answers.h"

#include <chrono>

namespace dq::client {

int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string base_url_of(const std::string& server) {
  if (server.rfind("http://", 0) == 0 || server.rfind("https://", 0) == 0) {
    return server.back() == '/' ? server.substr(0, server.size() - 1) : server;
  }
  return "http://" + server;
}

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

// The server's {"error": "..."}, or the raw body when it is not that shape.
std::string server_message(const std::string& body, long status) {
  Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()) {
    std::string message = parsed["error"].get<std::string>();
    // 401/403: {"error": "unauthorized", "reason": "..."}
    auto reason = parsed.find("reason");
    if (reason != parsed.end() && reason->is_string()) {
      message += ": " + reason->get<std::string>();
    }
    return message;
  }
  if (body.empty()) {
    return "HTTP " + std::to_string(status);
  }
  return body.size() > 200 ? body.substr(0, 200) + "..." : body;
}

Error error_from_answer(const HttpAnswer& answer, const std::string& server) {
  return Error{code_for_status(answer.status), static_cast<int>(answer.status),
               server_message(answer.body, answer.status), server};
}

Error protocol_error(const std::string& what, const HttpAnswer& answer, const std::string& server) {
  return Error{ErrorCode::Protocol, static_cast<int>(answer.status), what, server};
}

// Adds "delay" or "at" to a job object.
void put_when(const When& when, Json* job) {
  switch (when.kind()) {
    case When::Kind::kDefault:
      break;
    case When::Kind::kDelay:
      (*job)["delay"] = when.number();
      break;
    case When::Kind::kAtSeconds:
      (*job)["at"] = static_cast<int64_t>(when.number());
      break;
    case When::Kind::kAtText:
      (*job)["at"] = when.text();
      break;
  }
}

// A job object as JSON text: `fields` (id, delay or at) with the caller's
// body text spliced in as it is, so the server stores it byte for byte
// (parsing and dumping it would reorder keys and respell numbers). nullopt
// when the body is not JSON text or the id is not UTF-8.
std::optional<std::string> job_text(const Json& fields, const std::string& body_json) {
  if (!Json::accept(body_json)) {
    return std::nullopt;
  }
  std::string text;
  try {
    text = fields.dump();
  } catch (const Json::exception&) {
    return std::nullopt;
  }
  text.pop_back();  // the closing '}': fields is never empty (it has the id)
  return text + ",\"body\":" + body_json + "}";
}

Error body_not_json(const std::string& id) {
  return Error{ErrorCode::InvalidArgument, 0,
               "body of job '" + id +
                   "' must be JSON text, e.g. '\"text\"' or '{\"a\":1}', and its id UTF-8 text",
               ""};
}

JobState state_from_name(const std::string& name) {
  if (name == "delayed") {
    return JobState::Delayed;
  }
  if (name == "ready") {
    return JobState::Ready;
  }
  if (name == "working") {
    return JobState::Working;
  }
  if (name == "retrying") {
    return JobState::Retrying;
  }
  if (name == "held") {
    return JobState::Held;
  }
  if (name == "dead") {
    return JobState::Dead;
  }
  return JobState::Unknown;
}

StateCounts state_counts_of(const Json& json) {
  StateCounts c;
  if (!json.is_object()) {
    return c;
  }
  c.delayed = json.value("delayed", int64_t{0});
  c.ready = json.value("ready", int64_t{0});
  c.working = json.value("working", int64_t{0});
  c.retrying = json.value("retrying", int64_t{0});
  c.dead = json.value("dead", int64_t{0});
  c.held = json.value("held", int64_t{0});
  return c;
}

EventCounts event_counts_of(const Json& json) {
  EventCounts c;
  if (!json.is_object()) {
    return c;
  }
  c.added = json.value("added", int64_t{0});
  c.delivered = json.value("delivered", int64_t{0});
  c.failed = json.value("failed", int64_t{0});
  c.dead = json.value("dead", int64_t{0});
  c.deleted = json.value("deleted", int64_t{0});
  c.expired = json.value("expired", int64_t{0});
  c.requeued = json.value("requeued", int64_t{0});
  c.duplicate = json.value("duplicate", int64_t{0});
  return c;
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

// The answer's JSON object when the status is 200 and it has every key in
// `required`; else the Error to return.
std::variant<Json, Error> object_answer(const HttpAnswer& answer, const std::string& server,
                                        const char* what,
                                        std::initializer_list<const char*> required) {
  if (answer.status != 200) {
    return error_from_answer(answer, server);
  }
  Json reply = Json::parse(answer.body, nullptr, false);
  bool complete = reply.is_object();
  for (const char* key : required) {
    complete = complete && reply.contains(key);
  }
  if (!complete) {
    return protocol_error(std::string(what) + ": unexpected answer: " + answer.body, answer,
                          server);
  }
  return reply;
}

}  // namespace dq::client
