// Client::Impl: the server list, the transport and the failover loop that
// every call of dq::client::Client goes through (client.cc, client_reads.cc).
// Private to client/lib (not installed).
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "answers.h"
#include "dq/client.h"
#include "http_transport.h"
#include "server_list.h"

namespace dq::client {

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
  Result<Answered> call(const char* method, const std::string& path, const std::string& body,
                        bool* unsure = nullptr) {
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
      for (size_t index : servers_.attempt_order(monotonic_ms())) {
        const std::string& server = servers_.address(index);
        HttpAnswer answer = transport_.request(base_url_of(server), method, path, body,
                                               options_.connect_timeout_ms, options_.timeout_ms);
        if (answer.curl != CURLE_OK) {
          servers_.mark_down(index, monotonic_ms());
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

  std::string jobs_path(const std::string& topic) {
    return "/v1/topics/" + transport_.escape(topic) + "/jobs";
  }

  Options options_;
  ServerList servers_;
  std::string last_server_;
  HttpTransport transport_;
};

}  // namespace dq::client
