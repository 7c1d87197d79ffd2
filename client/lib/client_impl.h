// Client::Impl: the failover loop over the server list and the request
// shapes the typed calls share (an answer that must be an object with given
// keys, a write answered with its due time, a topic write). Private to the
// library: client.cc (jobs and topics) and schedules.cc build on it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "answers.h"
#include "dq/client.h"
#include "http_transport.h"
#include "server_list.h"

namespace dq::client {

using Json = nlohmann::json;

namespace internal {

inline int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline std::string base_url_of(const std::string& server) {
  if (server.rfind("http://", 0) == 0 || server.rfind("https://", 0) == 0) {
    return server.back() == '/' ? server.substr(0, server.size() - 1) : server;
  }
  return "http://" + server;
}

// The fields with "version" added when the caller names one; nullopt when
// they are not a JSON object.
inline std::optional<std::string> topic_fields_text(const std::string& fields_json,
                                                    std::optional<int64_t> if_version) {
  Json fields = Json::parse(fields_json, nullptr, false);
  if (!fields.is_object()) {
    return std::nullopt;
  }
  if (if_version) {
    fields["version"] = *if_version;
  }
  return fields.dump();
}

}  // namespace internal

class Client::Impl {
 public:
  explicit Impl(Options options)
      : options_(std::move(options)),
        servers_(options_.servers, options_.down_backoff_ms, options_.max_down_backoff_ms) {
    transport_.set_bearer_token(options_.token);
  }

  // An HTTP answer that is not a failover case, with the server that gave it.
  struct Answered {
    HttpAnswer answer;
    std::string server;
  };

  // Tries the servers in failover order. Moves on after a connection
  // failure or timeout (the server is marked down), a 503 (the server is up
  // but none of its shards could take the request) or a 504 (it could not
  // tell whether the write happened). When every server failed that way, it
  // waits and goes round again, options_.retries times. Returns the first
  // other answer, or the error of the last attempt. *unsure is set when an
  // attempt may have been carried out (a timeout or a 504).
  // timeout_ms: this call's own (a long poll's), else options_.timeout_ms.
  Result<Answered> call(const char* method, const std::string& path, const std::string& body,
                        bool* unsure = nullptr, const std::string& extra_header = "",
                        int timeout_ms = 0) {
    if (servers_.size() == 0) {
      return Error{ErrorCode::InvalidArgument, 0, "no server configured", ""};
    }
    std::optional<Error> last;
    std::string tried;
    last_server_.clear();
    int backoff = std::max(1, options_.retry_backoff_ms);
    for (int round = 0; round <= std::max(0, options_.retries); ++round) {
      if (round > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
        backoff *= 2;
      }
      for (size_t index : servers_.attempt_order(internal::monotonic_ms())) {
        const std::string& server = servers_.address(index);
        HttpAnswer answer = transport_.request(
            internal::base_url_of(server), method, path, body, options_.connect_timeout_ms,
            timeout_ms > 0 ? timeout_ms : options_.timeout_ms, extra_header);
        if (answer.curl != CURLE_OK) {
          servers_.mark_down(index, internal::monotonic_ms());
          bool timed_out = answer.curl == CURLE_OPERATION_TIMEDOUT;
          if (timed_out && unsure) {
            *unsure = true;
          }
          last = Error{
              timed_out ? ErrorCode::Timeout : ErrorCode::Unavailable, 0,
              server + ": " + (timed_out ? "timed out: " : "unreachable: ") + answer.curl_error,
              server};
        } else if (answer.status == 503 || answer.status == 504) {
          servers_.mark_up(index);
          if (answer.status == 504 && unsure) {
            *unsure = true;
          }
          last = error_from_answer(answer, server);
          last->message = server + ": " + last->message;
        } else {
          servers_.mark_up(index);
          last_server_ = server;
          return Answered{std::move(answer), server};
        }
        tried += (tried.empty() ? "" : "; ") + last->message;
      }
    }
    if (servers_.size() > 1 || options_.retries > 0) {
      last->message = "all " + std::to_string(servers_.size()) + " server(s) failed, " +
                      std::to_string(std::max(0, options_.retries) + 1) + " round(s): " + tried;
    }
    return *last;
  }

  // A write answered 201 or 200 with a JSON object holding an integer
  // due_at_ms (add, update): the answer and that object, or the Error.
  struct WriteAnswer {
    HttpAnswer answer;
    Json reply;
    std::string server;
  };
  Result<WriteAnswer> write_call(const char* method, const std::string& path,
                                 const std::string& body, const char* what) {
    auto called = call(method, path, body);
    if (!called) {
      return called.error();
    }
    const HttpAnswer& answer = called->answer;
    if (answer.status != 201 && answer.status != 200) {
      return error_from_answer(answer, called->server);
    }
    Json reply = Json::parse(answer.body, nullptr, false);
    if (!reply.is_object() || !reply.contains("due_at_ms") ||
        !reply["due_at_ms"].is_number_integer()) {
      return protocol_error(std::string(what) + " answered " + std::to_string(answer.status) +
                                " without due_at_ms: " + answer.body,
                            answer, called->server);
    }
    return WriteAnswer{answer, std::move(reply), called->server};
  }

  // A request whose answer must be 200 with a JSON object holding every key in
  // `required`: that object, the answer's body and the server that gave it,
  // or the Error to return.
  struct ObjectAnswer {
    Json reply;
    std::string body;
    std::string server;
  };
  // stale: a 409 is StaleToken (a pull worker's ack, nack or touch) when
  // the server says "stale token".
  Result<ObjectAnswer> object_call(const char* method, const std::string& path,
                                   const std::string& body, const char* what,
                                   std::initializer_list<const char*> required, int timeout_ms = 0,
                                   bool stale = false) {
    auto called = call(method, path, body, nullptr, "", timeout_ms);
    if (!called) {
      return called.error();
    }
    const HttpAnswer& answer = called->answer;
    if (answer.status != 200) {
      Error error = error_from_answer(answer, called->server);
      if (stale && answer.status == 409 && error.message.rfind("stale token", 0) == 0) {
        error.code = ErrorCode::StaleToken;
      }
      return error;
    }
    Json reply = Json::parse(answer.body, nullptr, false);
    bool complete = reply.is_object();
    for (const char* key : required) {
      complete = complete && reply.contains(key);
    }
    if (!complete) {
      return protocol_error(std::string(what) + ": unexpected answer: " + answer.body, answer,
                            called->server);
    }
    return ObjectAnswer{std::move(reply), answer.body, called->server};
  }

  // PUT or PATCH /v1/topics/{topic}.
  Result<TopicSettings> topic_write(const char* method, const std::string& topic,
                                    const std::string& fields_json,
                                    std::optional<int64_t> if_version,
                                    const std::string& extra_header = "") {
    std::optional<std::string> body = internal::topic_fields_text(fields_json, if_version);
    if (!body) {
      return Error{ErrorCode::InvalidArgument, 0, "topic fields must be a JSON object", ""};
    }
    auto called =
        call(method, "/v1/topics/" + transport_.escape(topic), *body, nullptr, extra_header);
    if (!called) {
      return called.error();
    }
    if (called->answer.status != 200 && called->answer.status != 201) {
      return error_from_answer(called->answer, called->server);
    }
    return topic_settings_of(called->answer, called->server);
  }

  std::string jobs_path(const std::string& topic) {
    return "/v1/topics/" + transport_.escape(topic) + "/jobs";
  }
  std::string schedules_path(const std::string& topic) {
    return "/v1/topics/" + transport_.escape(topic) + "/schedules";
  }

  Options options_;
  ServerList servers_;
  std::string last_server_;
  HttpTransport transport_;
};

}  // namespace dq::client
