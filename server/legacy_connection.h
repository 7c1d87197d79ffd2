// LegacyConnection: one connection of the PHP delay queue's framed protocol
// (see legacy_server.h), over a libevent bufferevent. It reassembles frames
// from any split of TCP reads, runs one request at a time (Redis answers
// arrive later) and writes replies in request order. A header that is not 4
// digits or a frame over the limit gets a code 0 reply and the connection is
// closed, since where the next frame would start is unknown. A request still
// in Redis after legacy_reply_timeout_ms is answered "timeout, outcome
// unknown" and its late result dropped, so replies never shift. Limits: a
// connection over max_connections, or whose frame has not arrived whole
// within request_timeout_ms of its first byte, gets a code 0 reply and is
// closed; a connection silent for legacy_idle_timeout_ms is closed without a
// word (an unasked reply would be read as the answer to the client's next
// request). Included by server/legacy_server.cc only.
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <list>
#include <memory>
#include <string>

#include "common/core/clock.h"
#include "common/core/event_handles.h"
#include "common/core/json_big_numbers.h"
#include "common/core/json_span.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/store/end_memory.h"
#include "server/accepted_stream.h"
#include "server/api_auth.h"
#include "server/job_request.h"
#include "server/legacy_fields.h"
#include "server/legacy_frame.h"
#include "server/legacy_server.h"

namespace dq {
namespace legacy_detail {

// A request's JSON may be a little bigger than its body (cmd, topic, id, fix_time).
inline constexpr size_t kRequestOverheadBytes = 1024;
// Reading pauses while this much is buffered and unanswered (pipelining clients).
inline constexpr size_t kMaxBufferedInput = size_t{256} * 1024;
// Requests are not run while this much reply data waits for the client to read it.
inline constexpr size_t kMaxBufferedOutput = size_t{1024} * 1024;

inline constexpr const char* kTimeoutReason = "timeout, outcome unknown";

// legacy_success_frame with the data already JSON text (a stored body, sent
// back byte for byte). Keys in the order nlohmann writes them: code, data, msg.
inline std::string success_frame_with_raw_data(const std::string& data_json) {
  std::string json = "{\"code\":1,\"data\":" + data_json + ",\"msg\":\"succ\"}";
  if (json.size() > kLegacyMaxJsonBytes) {
    return legacy_failure_frame("reply too large for the legacy framing (" +
                                std::to_string(json.size()) +
                                " bytes of JSON, at most 9999): use the HTTP API for this job");
  }
  return frame_legacy_json(json);
}

}  // namespace legacy_detail

using legacy_detail::kMaxBufferedInput;
using legacy_detail::kMaxBufferedOutput;
using legacy_detail::kRequestOverheadBytes;
using legacy_detail::kTimeoutReason;
using legacy_detail::success_frame_with_raw_data;

class LegacyConnection : public std::enable_shared_from_this<LegacyConnection> {
 public:
  LegacyConnection(LegacyServer& server, UniqueBufferevent event)
      : server_(server),
        event_(std::move(event)),
        reply_timer_(evtimer_new(server.base_, &LegacyConnection::on_reply_timeout, this)),
        frame_timer_(evtimer_new(server.base_, &LegacyConnection::on_frame_timeout, this)) {}

  void start() {
    bufferevent_setcb(event_.get(), &LegacyConnection::on_read, &LegacyConnection::on_write,
                      &LegacyConnection::on_event, this);
    bufferevent_setwatermark(event_.get(), EV_READ, 0, kMaxBufferedInput);
    int idle_ms = server_.config_.legacy_idle_timeout_ms;
    timeval idle{idle_ms / 1000, static_cast<suseconds_t>(idle_ms % 1000) * 1000};
    bufferevent_set_timeouts(event_.get(), &idle, nullptr);
    bufferevent_enable(event_.get(), EV_READ | EV_WRITE);
  }

  // Answers the connection's first request with code 0 `reason` (sent at
  // once: the client reads it as that answer) and closes. May delete this.
  void refuse(const std::string& reason) {
    request_log().info("legacy - - - -> code 0 {}", reason);
    send(legacy_failure_frame(reason));
    closing_ = true;
    pump();
  }

  // True when nothing is in flight and no whole request waits to be read.
  bool idle() {
    if (busy_) {
      return false;
    }
    evbuffer* input = bufferevent_get_input(event_.get());
    size_t length = evbuffer_get_length(input);
    if (length == 0) {
      return true;
    }
    const char* data = reinterpret_cast<const char*>(evbuffer_pullup(input, -1));
    return parse_legacy_frame(data, length, max_json_bytes()).result == FrameResult::kNeedMore;
  }

  // Called by stop_accepting(): finish what was read, then close. May delete this.
  void stop() {
    stopping_ = true;
    pump();
  }

  // Nothing in flight, nothing received (read or still in the socket), nothing
  // left to write: may be closed to make room. Under pressure only: it may
  // peek at the socket.
  bool evictable() {
    if (busy_ || closing_ || evbuffer_get_length(bufferevent_get_input(event_.get())) > 0 ||
        evbuffer_get_length(bufferevent_get_output(event_.get())) > 0) {
      return false;
    }
    char byte;
    return recv(bufferevent_getfd(event_.get()), &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
  }
  void evict() { close(); }  // deletes this

  ActivityOrder<LegacyConnection>::Place place_;  // in the server's order_

 private:
  static void on_read(bufferevent* /*event*/, void* arg) {
    static_cast<LegacyConnection*>(arg)->pump();
  }

  static void on_write(bufferevent* /*event*/, void* arg) {
    auto* self = static_cast<LegacyConnection*>(arg);
    // The output drained: run requests held back by a slow reader, or close.
    self->pump();
  }

  static void on_event(bufferevent* /*event*/, short what, void* arg) {
    auto* self = static_cast<LegacyConnection*>(arg);
    if (what & BEV_EVENT_TIMEOUT) {
      // Nothing read for legacy_idle_timeout_ms (a request in flight is
      // answered within legacy_reply_timeout_ms: let it finish first).
      if (self->busy_) {
        bufferevent_enable(self->event_.get(), EV_READ);
        return;
      }
      request_log().info("legacy: closing a connection idle for {} ms",
                         self->server_.config_.legacy_idle_timeout_ms);
      return self->close();  // deletes self
    }
    if (what & BEV_EVENT_EOF) {
      // Half-closed: answer the requests already received, then close.
      self->peer_closed_ = true;
      self->pump();
      return;
    }
    if (what & BEV_EVENT_ERROR) {
      self->close();  // deletes self
    }
  }

  // The request in flight ran out of [server] legacy_reply_timeout_ms: answer
  // it now so the client (which gives up after 1 s) never reads a late reply
  // as the answer to its next request. Its result is dropped when it comes.
  static void on_reply_timeout(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
    auto* self = static_cast<LegacyConnection*>(arg);
    if (!self->busy_) {
      return;
    }
    self->finish_failure(self->cmd_, self->topic_, self->id_, kTimeoutReason);  // may delete self
  }

  // A frame began request_timeout_ms ago and is still not whole: a client
  // this slow cannot hold the connection. May delete this.
  static void on_frame_timeout(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
    auto* self = static_cast<LegacyConnection*>(arg);
    self->frame_armed_ = false;
    if (self->closing_) {
      return;
    }
    if (self->busy_ || !self->partial_frame()) {
      return self->pump();  // re-arms if need be
    }
    int timeout_ms = self->server_.config_.request_timeout_ms;
    evbuffer_drain(bufferevent_get_input(self->event_.get()), SIZE_MAX);
    self->refuse("frame not received whole within " + std::to_string(timeout_ms) +
                 " ms ([server] request_timeout_ms)");
  }

  // True when the input holds the start of a frame but not all of it.
  bool partial_frame() {
    evbuffer* input = bufferevent_get_input(event_.get());
    size_t length = evbuffer_get_length(input);
    if (length == 0) {
      return false;
    }
    const char* data = reinterpret_cast<const char*>(evbuffer_pullup(input, -1));
    return parse_legacy_frame(data, length, max_json_bytes()).result == FrameResult::kNeedMore;
  }

  size_t max_json_bytes() const { return server_.config_.max_body_bytes + kRequestOverheadBytes; }

  // Runs every whole request in the input, one at a time, then closes the
  // connection when it has nothing left to do and should go. May delete this.
  void pump() {
    if (pumping_) {
      return;  // a reply that came back synchronously: the loop below goes on
    }
    pumping_ = true;
    evbuffer* input = bufferevent_get_input(event_.get());
    evbuffer* output = bufferevent_get_output(event_.get());
    while (!busy_ && !closing_ && evbuffer_get_length(output) < kMaxBufferedOutput) {
      size_t length = evbuffer_get_length(input);
      if (length == 0) {
        break;
      }
      const char* data = reinterpret_cast<const char*>(evbuffer_pullup(input, -1));
      ParsedFrame frame = parse_legacy_frame(data, length, max_json_bytes());
      if (frame.result == FrameResult::kNeedMore) {
        break;
      }
      if (frame.result != FrameResult::kFrame) {
        request_log().info("legacy - - - -> code 0 {}", frame.reason);
        send(legacy_failure_frame(frame.reason));
        evbuffer_drain(input, length);
        closing_ = true;  // the stream cannot be resynchronised
        break;
      }
      evbuffer_drain(input, frame.consumed);
      disarm_frame_timer();  // the next frame's clock starts at its first byte
      handle(frame.json);
    }
    pumping_ = false;
    // Bytes of a frame not yet whole: it must be whole within request_timeout_ms.
    if (!closing_ && !frame_armed_ && evbuffer_get_length(input) > 0) {
      int timeout_ms = server_.config_.request_timeout_ms;
      timeval timeout{timeout_ms / 1000, static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
      evtimer_add(frame_timer_.get(), &timeout);
      frame_armed_ = true;
    }
    bool done = closing_ || ((stopping_ || peer_closed_) && idle());
    if (done && !busy_) {
      bufferevent_disable(event_.get(), EV_READ);
      // Close once the last reply is written: on_write calls pump() again when the output is empty.
      if (evbuffer_get_length(output) == 0) {
        close();  // deletes this
      }
    }
  }

  void disarm_frame_timer() {
    if (!frame_armed_) {
      return;
    }
    evtimer_del(frame_timer_.get());
    frame_armed_ = false;
  }

  void send(const std::string& frame) {
    bufferevent_write(event_.get(), frame.data(), frame.size());
  }

  // Parses and runs one request.
  void handle(const std::string& text) {
    server_.touch(this);
    Json request = parse_json_any_number(text);
    if (request.is_discarded() || !request.is_object()) {
      return reply_failure("-", "-", "-", "request is not a JSON object");
    }
    std::string cmd = legacy_text_field(request, "cmd");
    std::string topic = legacy_text_field(request, "topic");
    std::string id = legacy_text_field(request, "id");
    // [server] require_token: the token travels in the request's "token" field.
    if (auto refused = server_.auth_.check(legacy_text_field(request, "token"), &topic, "legacy")) {
      bool known = cmd == "add" || cmd == "get" || cmd == "del";  // a bounded metrics label
      return reply_failure(known ? cmd : "-", topic, id, refused->error + ": " + refused->reason);
    }
    if (cmd == "add") {
      return add(request, text, topic, id);
    }
    if (cmd == "get") {
      return get(topic, id);
    }
    if (cmd == "del") {
      return del(topic, id);
    }
    reply_failure(cmd.empty() ? "-" : cmd, topic, id,
                  "unknown cmd '" + cmd + "': expected add, get or del");
  }

  void add(const Json& request, const std::string& text, const std::string& topic,
           const std::string& id) {
    // The same job object the HTTP API takes, so both accept the same input;
    // the body is stored as its raw text in the request.
    Json job{{"id", id}};
    auto body = request.find("body");
    std::string job_text = text;
    if (body != request.end()) {
      job["body"] = *body;
    } else {
      job["body"] = nullptr;  // the PHP client sends no body when it has none
      job_text = with_raw_member(text, "body", "null");
    }
    // Absent or null: the topic's default delay (PHP's isset()); any other
    // value, "" (now) included, is a time of common/core/time_text.h.
    auto fix_time = request.find("fix_time");
    if (fix_time != request.end() && !fix_time->is_null()) {
      job["at"] = *fix_time;
    }
    auto built =
        build_add_request(topic, job, job_text, server_.topics_, server_.config_, now_ms());
    if (!built.is_ok()) {
      return reply_failure("add", topic, id, built.status().message());
    }
    uint64_t number = begin("add", topic, id);
    std::weak_ptr<LegacyConnection> weak = shared_from_this();
    server_.jobs_.add(std::move(*built),
                      [weak, number, topic, id](const AddRequest&, const Result<Added>& added) {
                        auto self = weak.lock();
                        if (!self || !self->current(number)) {
                          return;
                        }
                        if (!added.is_ok()) {
                          return self->finish_failure("add", topic, id, added.status().message());
                        }
                        self->finish_success("add", topic, id, Json::array());
                      });
  }

  void get(const std::string& topic, const std::string& id) {
    Status ok = check_topic_and_id(topic, id, server_.topics_);
    if (!ok.is_ok()) {
      return reply_failure("get", topic, id, ok.message());
    }
    uint64_t number = begin("get", topic, id);
    std::weak_ptr<LegacyConnection> weak = shared_from_this();
    server_.jobs_.get(topic, id, [weak, number, topic, id](Result<Job> job) {
      auto self = weak.lock();
      if (!self || !self->current(number)) {
        return;
      }
      if (!job.is_ok()) {
        return self->finish_failure("get", topic, id, job.status().message());
      }
      self->finish_success_frame("get", topic, id,
                                 success_frame_with_raw_data(legacy_get_data(*job)));
    });
  }

  void del(const std::string& topic, const std::string& id) {
    Status ok = check_topic_and_id(topic, id, server_.topics_);
    if (!ok.is_ok()) {
      return reply_failure("del", topic, id, ok.message());
    }
    uint64_t number = begin("del", topic, id);
    std::weak_ptr<LegacyConnection> weak = shared_from_this();
    const Topic* known = server_.topics_.find(topic);
    int64_t keep_ms = known == nullptr ? 0 : end_memory_of(*known).keep_ms;
    server_.jobs_.del(
        topic, id,
        [weak, number, topic, id](const Status& status, bool) {
          auto self = weak.lock();
          if (!self || !self->current(number)) {
            return;
          }
          if (!status.is_ok()) {
            return self->finish_failure("del", topic, id, status.message());
          }
          self->finish_success("del", topic, id, Json::array());
        },
        keep_ms);
  }

  // Marks a request in flight and arms its reply timeout; returns its number.
  uint64_t begin(const char* cmd, const std::string& topic, const std::string& id) {
    busy_ = true;
    started_ms_ = monotonic_ms();
    cmd_ = cmd;
    topic_ = topic;
    id_ = id;
    int timeout_ms = server_.config_.legacy_reply_timeout_ms;
    timeval timeout{timeout_ms / 1000, static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
    evtimer_add(reply_timer_.get(), &timeout);
    return ++request_;
  }

  // False for a request that was already answered (timed out): drop its result.
  bool current(uint64_t request) const { return busy_ && request == request_; }

  // The request in flight is answered: disarm its timeout.
  void end() {
    busy_ = false;
    evtimer_del(reply_timer_.get());
  }

  // Answers a request refused before it reached Redis.
  void reply_failure(const std::string& cmd, const std::string& topic, const std::string& id,
                     const std::string& reason) {
    started_ms_ = monotonic_ms();
    log_request(cmd, topic, id, 0, reason);
    send(legacy_failure_frame(reason));
  }

  // Answers the request in flight, then goes on with the next one (may delete this).
  void finish_success(const char* cmd, const std::string& topic, const std::string& id,
                      const Json& data) {
    finish_success_frame(cmd, topic, id, legacy_success_frame(data));
  }

  void finish_success_frame(const char* cmd, const std::string& topic, const std::string& id,
                            const std::string& frame) {
    log_request(cmd, topic, id, 1, "succ");
    send(frame);
    end();
    pump();
  }

  void finish_failure(const char* cmd, const std::string& topic, const std::string& id,
                      const std::string& reason) {
    log_request(cmd, topic, id, 0, reason);
    send(legacy_failure_frame(reason));
    end();
    pump();
  }

  void log_request(const std::string& cmd, const std::string& topic, const std::string& id,
                   int code, const std::string& msg) {
    int64_t took_ms = monotonic_ms() - started_ms_;
    request_log().info("legacy {} {} {} -> code {} {}ms {}", cmd, topic.empty() ? "-" : topic,
                       id.empty() ? "-" : id, code, took_ms, msg);
    SharedMetrics::instance().observe(SharedMetrics::key({"legacy", cmd, std::to_string(code)}),
                                      static_cast<double>(took_ms) / 1000.0);
  }

  void close() { server_.closed(this); }  // deletes this

  LegacyServer& server_;
  UniqueBufferevent event_;
  UniqueEvent reply_timer_;  // [server] legacy_reply_timeout_ms of the request in flight
  UniqueEvent frame_timer_;  // [server] request_timeout_ms of a frame not yet whole
  bool frame_armed_ = false;
  bool busy_ = false;      // a request is waiting for Redis
  uint64_t request_ = 0;   // number of the latest request sent to Redis
  const char* cmd_ = "-";  // the request in flight, for its timeout reply and log line
  std::string topic_;
  std::string id_;
  bool pumping_ = false;      // inside pump()
  bool closing_ = false;      // close once the output is written
  bool stopping_ = false;     // the server stops: close when idle
  bool peer_closed_ = false;  // the client shut down its side
  int64_t started_ms_ = 0;
};

}  // namespace dq
