// HttpConnection (see http_connection.h).
#include "server/http_connection.h"

#include <event2/buffer.h>
#include <sys/socket.h>

#include "common/json.h"
#include "common/log.h"
#include "server/http_reply.h"
#include "server/http_server.h"

namespace dq {
namespace {

// Requests of one connection handed over and not yet answered. One: a
// pipelined request runs after the one before it is answered, so a GET sent
// right behind an add sees the job (requests to Redis may take different
// paths and would otherwise race). Reading pauses meanwhile.
constexpr size_t kMaxPipelined = 1;
// Requests are not read while this much answer data waits for the client.
constexpr size_t kMaxBufferedOutput = 1024 * 1024;
// How long a closing connection keeps reading what the client still sends.
constexpr int kLingerMs = 2000;
// Consumed input is erased once it is this large (or all of the input).
constexpr size_t kCompactBytes = 64 * 1024;

timeval timeval_of(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

HttpLimits limits_of(const Config& config) {
  HttpLimits limits;
  limits.max_head_bytes = config.max_header_bytes;
  limits.max_body_bytes = config.max_request_bytes;
  return limits;
}

}  // namespace

HttpConnection::HttpConnection(HttpServer& server, bufferevent* event, std::string refusal)
    : server_(server),
      event_(event),
      request_timer_(evtimer_new(server.base_, &HttpConnection::on_request_timeout, this)),
      linger_timer_(evtimer_new(server.base_, &HttpConnection::on_linger_timeout, this)),
      parser_(limits_of(server.config_)),
      refusal_(std::move(refusal)) {}

HttpConnection::~HttpConnection() {
  for (auto& exchange : queue_) exchange->connection_ = nullptr;
}

void HttpConnection::start() {
  bufferevent_setcb(event_.get(), &HttpConnection::on_read, &HttpConnection::on_write,
                    &HttpConnection::on_event, this);
  timeval idle = timeval_of(server_.config_.idle_timeout_ms);
  bufferevent_set_timeouts(event_.get(), &idle, &idle);
  bufferevent_enable(event_.get(), EV_READ | EV_WRITE);
}

bool HttpConnection::closes_after(const HttpExchange& exchange) const {
  // Not closing_: answers queued before a failed or last request still keep
  // the connection open for the answers after them.
  return !exchange.head().keep_alive || server_.stopping() || !refusal_.empty();
}

void HttpConnection::exchange_answered() {
  if (!pumping_) pump();
}

void HttpConnection::on_read(bufferevent* event, void* arg) {
  auto* self = static_cast<HttpConnection*>(arg);
  evbuffer* input = bufferevent_get_input(event);
  size_t length = evbuffer_get_length(input);
  if (self->lingering_ || self->closing_) {
    evbuffer_drain(input, length);
    return;
  }
  size_t old = self->input_.size();
  self->input_.resize(old + length);
  evbuffer_remove(input, &self->input_[old], length);
  self->pump();
}

void HttpConnection::on_write(bufferevent* /*event*/, void* arg) {
  auto* self = static_cast<HttpConnection*>(arg);
  if (self->lingering_) return;
  self->pump();  // the output drained: read again, or close
}

void HttpConnection::on_event(bufferevent* /*event*/, short what, void* arg) {
  auto* self = static_cast<HttpConnection*>(arg);
  if (what & BEV_EVENT_TIMEOUT) {
    if (self->lingering_) return self->close();
    // Nothing read for idle_timeout_ms: wait for answers still due, else close.
    if ((what & BEV_EVENT_READING) && !self->queue_.empty()) {
      bufferevent_enable(self->event_.get(), EV_READ);
      return;
    }
    request_log().info("closing an HTTP connection idle for {} ms",
                       self->server_.config_.idle_timeout_ms);
    return self->close();
  }
  if (what & BEV_EVENT_EOF) {
    if (self->lingering_) return self->close();
    self->peer_closed_ = true;  // answer what was received, then close
    self->pump();
    return;
  }
  if (what & BEV_EVENT_ERROR) self->close();
}

void HttpConnection::on_request_timeout(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* self = static_cast<HttpConnection*>(arg);
  self->request_armed_ = false;
  if (self->closing_ || !self->parser_.started()) return;
  int timeout_ms = self->server_.config_.request_timeout_ms;
  request_log().info("closing a connection whose request took over {} ms to arrive", timeout_ms);
  self->fail(408, "request not received whole within " + std::to_string(timeout_ms) +
                      " ms ([server] request_timeout_ms)");
  self->pump();
}

void HttpConnection::on_linger_timeout(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  static_cast<HttpConnection*>(arg)->close();
}

void HttpConnection::pump() {
  if (lingering_) return;
  pumping_ = true;
  write_answers();
  take_requests();
  write_answers();
  pumping_ = false;
  evbuffer* output = bufferevent_get_output(event_.get());
  bool done = closing_ || (peer_closed_ && drained_input_);
  if (done && queue_.empty()) {
    bufferevent_disable(event_.get(), EV_READ);
    if (evbuffer_get_length(output) == 0) linger();  // else on_write comes back here
    return;
  }
  bool paused = closing_ || peer_closed_ || queue_.size() >= kMaxPipelined ||
                evbuffer_get_length(output) >= kMaxBufferedOutput;
  if (paused) {
    bufferevent_disable(event_.get(), EV_READ);
  } else {
    bufferevent_enable(event_.get(), EV_READ);
  }
}

void HttpConnection::take_requests() {
  evbuffer* output = bufferevent_get_output(event_.get());
  drained_input_ = false;
  while (!closing_ && queue_.size() < kMaxPipelined &&
         evbuffer_get_length(output) < kMaxBufferedOutput && input_start_ < input_.size()) {
    std::string_view input(input_.data() + input_start_, input_.size() - input_start_);
    HttpParse result = parser_.parse(input);
    if (result == HttpParse::kNeedMore) {
      drained_input_ = true;
      if (parser_.started()) arm_request_timer();
      maybe_continue();
      break;
    }
    if (result == HttpParse::kError) {
      fail(parser_.error_status(), parser_.error());
      break;
    }
    disarm_request_timer();
    input_start_ += parser_.consumed();
    std::string body = std::move(parser_.body());
    HttpRequestHead head = parser_.take_head();
    parser_.reset();
    continue_sent_ = false;
    if (!head.keep_alive) closing_ = true;  // the client's last request
    auto exchange = std::make_shared<HttpExchange>(std::move(head), std::move(body), this,
                                                   queue_.empty() ? refusal_ : std::string());
    queue_.push_back(exchange);
    server_.handler_(exchange);              // may answer at once
    if (!refusal_.empty()) closing_ = true;  // nothing after the refused request
  }
  if (input_start_ == input_.size()) {
    drained_input_ = true;
    input_.clear();
    input_start_ = 0;
  } else if (input_start_ >= kCompactBytes) {
    input_.erase(0, input_start_);
    input_start_ = 0;
  }
}

void HttpConnection::write_answers() {
  while (!queue_.empty() && queue_.front()->answered()) {
    std::shared_ptr<HttpExchange> exchange = std::move(queue_.front());
    queue_.pop_front();
    exchange->connection_ = nullptr;
    if (!exchange->reply_.empty()) {
      bufferevent_write(event_.get(), exchange->reply_.data(), exchange->reply_.size());
      exchange->reply_.clear();
    }
    if (exchange->closes_) {
      // Nothing after a closing answer is written: detach the rest.
      closing_ = true;
      for (auto& rest : queue_) rest->connection_ = nullptr;
      queue_.clear();
    }
  }
  maybe_continue();
}

void HttpConnection::maybe_continue() {
  // Only once every earlier request is answered: interim answers keep the order too.
  if (continue_sent_ || closing_ || !queue_.empty() || !parser_.head_done() ||
      !parser_.head().expect_continue) {
    return;
  }
  continue_sent_ = true;
  static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
  bufferevent_write(event_.get(), kContinue, sizeof kContinue - 1);
}

void HttpConnection::fail(int status, const std::string& message) {
  request_log().info("http - - -> {} {}", status, message);
  disarm_request_timer();
  closing_ = true;
  HttpRequestHead head;
  head.keep_alive = false;
  auto exchange = std::make_shared<HttpExchange>(std::move(head), std::string(), this, "");
  queue_.push_back(exchange);
  std::string body =
      dump_json(Json{{"error", std::string(reason_of(status)) + ": " + message}}) + "\n";
  bool was_pumping = pumping_;
  pumping_ = true;  // the answer waits its turn in write_answers()
  exchange->answer(status, "application/json", body);
  pumping_ = was_pumping;
}

void HttpConnection::arm_request_timer() {
  if (request_armed_) return;
  timeval timeout = timeval_of(server_.config_.request_timeout_ms);
  evtimer_add(request_timer_.get(), &timeout);
  request_armed_ = true;
}

void HttpConnection::disarm_request_timer() {
  if (!request_armed_) return;
  evtimer_del(request_timer_.get());
  request_armed_ = false;
}

void HttpConnection::linger() {
  disarm_request_timer();
  if (peer_closed_) return close();
  lingering_ = true;
  shutdown(bufferevent_getfd(event_.get()), SHUT_WR);
  bufferevent_enable(event_.get(), EV_READ);
  timeval linger = timeval_of(kLingerMs);
  bufferevent_set_timeouts(event_.get(), &linger, nullptr);
  evtimer_add(linger_timer_.get(), &linger);
}

void HttpConnection::close() { server_.closed(this); }

}  // namespace dq
