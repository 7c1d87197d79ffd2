// HttpConnection (see http_connection.h).
#include "server/http_connection.h"

#include <errno.h>
#include <sys/socket.h>

#include "common/core/json.h"
#include "common/core/log.h"
#include "server/http_reply.h"
#include "server/http_server.h"

namespace dq {
namespace {

// Requests of one connection handed over and not yet answered. One: a
// pipelined request runs after the one before it is answered, so a GET sent
// right behind an add sees the job (requests to Redis may take different
// paths and would otherwise race).
constexpr size_t kMaxPipelined = 1;
// Bytes of later requests read while one waits for its answer. Below this the
// read event stays armed (no epoll_ctl per request); above it reading pauses.
constexpr size_t kMaxWaitingInput = size_t{64} * 1024;
// Requests are not read while this much answer data waits for the client.
constexpr size_t kMaxBufferedHttpOutput = size_t{1024} * 1024;
// How long a closing connection keeps reading what the client still sends.
constexpr int kLingerMs = 2000;
// Consumed input is erased once it is this large (or all of the input).
constexpr size_t kCompactBytes = size_t{64} * 1024;
// One recv: a whole add request is a few hundred bytes.
constexpr size_t kReadBytes = size_t{16} * 1024;

bool would_block(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == EINTR; }

timeval timeval_of(int ms) {
  return timeval{ms / 1000, static_cast<suseconds_t>(ms % 1000) * 1000};
}

HttpLimits limits_of(const Config& config) {
  HttpLimits limits;
  limits.max_head_bytes = config.max_header_bytes;
  limits.max_body_bytes = config.max_request_bytes;
  return limits;
}

}  // namespace

HttpConnection::HttpConnection(HttpServer& server, evutil_socket_t fd, std::string refusal)
    : server_(server),
      fd_(fd),
      read_event_(
          event_new(server.base_, fd, EV_READ | EV_PERSIST, &HttpConnection::on_readable, this)),
      write_event_(
          event_new(server.base_, fd, EV_WRITE | EV_PERSIST, &HttpConnection::on_writable, this)),
      request_timer_(evtimer_new(server.base_, &HttpConnection::on_request_timeout, this)),
      linger_timer_(evtimer_new(server.base_, &HttpConnection::on_linger_timeout, this)),
      parser_(limits_of(server.config_)),
      refusal_(std::move(refusal)) {}

HttpConnection::~HttpConnection() {
  for (auto& exchange : queue_) {
    exchange->connection_ = nullptr;
  }
  read_event_.reset();  // out of the loop before the descriptor closes
  write_event_.reset();
  evutil_closesocket(fd_);
}

void HttpConnection::start() { set_reading(true); }

bool HttpConnection::closes_after(const HttpExchange& exchange) const {
  // Not closing_: answers queued before a failed or last request still keep
  // the connection open for the answers after them.
  return !exchange.head().keep_alive || server_.stopping() || !refusal_.empty();
}

bool HttpConnection::idle() const {
  if (lingering_) {
    return true;
  }
  if (!queue_.empty() || parser_.started() || output_size() > 0 || input_start_ < input_.size()) {
    return false;
  }
  // Bytes the loop has not read yet (a connection accepted in this burst
  // whose request is on its way) make it busy, not idle.
  char byte;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

void HttpConnection::exchange_answered() {
  if (!pumping_) {
    pump();
  }
}

void HttpConnection::on_readable(evutil_socket_t fd, short what, void* arg) {
  auto* self = static_cast<HttpConnection*>(arg);
  if (what & EV_TIMEOUT) {
    return self->idle_timed_out(/*reading=*/true);
  }
  thread_local char buffer[kReadBytes];
  ssize_t got = recv(fd, buffer, sizeof buffer, 0);
  if (got < 0) {
    if (!would_block(errno)) {
      self->close();
    }
    return;
  }
  if (got == 0) {  // the client shut down its side
    self->set_reading(false);
    if (self->lingering_) {
      return self->close();
    }
    self->peer_closed_ = true;  // answer what was received, then close
    self->pump();
    return;
  }
  if (self->lingering_ || self->closing_) {
    return;  // nothing more is read: dropped
  }
  self->input_.append(buffer, static_cast<size_t>(got));
  self->pump();
}

void HttpConnection::on_writable(evutil_socket_t fd, short what, void* arg) {
  auto* self = static_cast<HttpConnection*>(arg);
  if (what & EV_TIMEOUT) {
    return self->idle_timed_out(/*reading=*/false);
  }
  ssize_t sent =
      send(fd, self->output_.data() + self->output_start_, self->output_size(), MSG_NOSIGNAL);
  if (sent < 0) {
    if (!would_block(errno)) {
      self->close();
    }
    return;
  }
  self->output_start_ += static_cast<size_t>(sent);
  if (self->output_size() > 0) {
    if (self->output_start_ >= kCompactBytes) {
      self->output_.erase(0, self->output_start_);
      self->output_start_ = 0;
    }
    return;
  }
  self->output_.clear();
  self->output_start_ = 0;
  event_del(self->write_event_.get());
  self->writing_ = false;
  if (self->lingering_) {
    return;
  }
  self->pump();  // the output drained: read again, or close
}

// Nothing read (reading) or nothing written (writing) for idle_timeout_ms.
void HttpConnection::idle_timed_out(bool reading) {
  if (lingering_) {
    return close();
  }
  // Silent while its answer is still due: keep waiting (the event stays armed).
  if (reading && !queue_.empty()) {
    return;
  }
  request_log().info("closing an HTTP connection idle for {} ms", server_.config_.idle_timeout_ms);
  close();
}

void HttpConnection::set_reading(bool on) {
  if (on == reading_) {
    return;
  }
  reading_ = on;
  if (on) {
    event_add(read_event_.get(), server_.idle_timeout_);
  } else {
    event_del(read_event_.get());
  }
}

void HttpConnection::send_bytes(const char* data, size_t size) {
  if (!writing_) {
    // Nothing waits: straight to the socket. An error other than a full
    // socket is left to the write event, which closes the connection.
    ssize_t sent = send(fd_, data, size, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(size)) {
      return;
    }
    if (sent > 0) {
      data += sent;
      size -= static_cast<size_t>(sent);
    }
    event_add(write_event_.get(), server_.idle_timeout_);
    writing_ = true;
  }
  output_.append(data, size);
}

void HttpConnection::on_request_timeout(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* self = static_cast<HttpConnection*>(arg);
  self->request_armed_ = false;
  if (self->closing_ || !self->parser_.started()) {
    return;
  }
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
  if (lingering_) {
    return;
  }
  pumping_ = true;
  write_answers();
  // A request answered at once (a health check, a refusal) frees its place
  // while this loop runs, and no event comes for it: the requests read
  // behind it in input_ are taken here, or they would wait for bytes the
  // client never sends.
  do {
    take_requests();
  } while (write_answers());
  pumping_ = false;
  bool done = closing_ || (peer_closed_ && drained_input_);
  if (done && queue_.empty()) {
    set_reading(false);
    if (output_size() == 0) {
      linger();  // else on_writable comes back here
    }
    return;
  }
  bool paused =
      closing_ || peer_closed_ || output_size() >= kMaxBufferedHttpOutput ||
      (queue_.size() >= kMaxPipelined && input_.size() - input_start_ >= kMaxWaitingInput);
  set_reading(!paused);
}

void HttpConnection::take_requests() {
  drained_input_ = false;
  while (!closing_ && queue_.size() < kMaxPipelined && output_size() < kMaxBufferedHttpOutput &&
         input_start_ < input_.size()) {
    std::string_view input(input_.data() + input_start_, input_.size() - input_start_);
    HttpParse result = parser_.parse(input);
    if (result == HttpParse::kNeedMore) {
      drained_input_ = true;
      if (parser_.started()) {
        arm_request_timer();
      }
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
    if (!head.keep_alive) {
      closing_ = true;  // the client's last request
    }
    server_.touch(this);
    auto exchange = std::make_shared<HttpExchange>(std::move(head), std::move(body), this,
                                                   queue_.empty() ? refusal_ : std::string());
    queue_.push_back(exchange);
    server_.handler_(exchange);  // may answer at once
    if (!refusal_.empty()) {
      closing_ = true;  // nothing after the refused request
    }
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

bool HttpConnection::write_answers() {
  bool wrote = false;
  bool took = false;
  while (!queue_.empty() && queue_.front()->answered()) {
    took = true;
    std::shared_ptr<HttpExchange> exchange = std::move(queue_.front());
    queue_.pop_front();
    exchange->connection_ = nullptr;
    if (!exchange->reply_.empty()) {
      send_bytes(exchange->reply_.data(), exchange->reply_.size());
      exchange->reply_.clear();
      wrote = true;
    }
    if (exchange->closes_) {
      // Nothing after a closing answer is written: detach the rest.
      closing_ = true;
      for (auto& rest : queue_) {
        rest->connection_ = nullptr;
      }
      queue_.clear();
    }
  }
  // The idle clock starts again at an answer, as if reading had just resumed.
  if (wrote && reading_) {
    event_add(read_event_.get(), server_.idle_timeout_);
  }
  maybe_continue();
  return took;
}

void HttpConnection::maybe_continue() {
  // Only once every earlier request is answered: interim answers keep the order too.
  if (continue_sent_ || closing_ || !queue_.empty() || !parser_.head_done() ||
      !parser_.head().expect_continue) {
    return;
  }
  continue_sent_ = true;
  static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
  send_bytes(kContinue, sizeof kContinue - 1);
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
  if (request_armed_) {
    return;
  }
  timeval timeout = timeval_of(server_.config_.request_timeout_ms);
  evtimer_add(request_timer_.get(), &timeout);
  request_armed_ = true;
}

void HttpConnection::disarm_request_timer() {
  if (!request_armed_) {
    return;
  }
  evtimer_del(request_timer_.get());
  request_armed_ = false;
}

void HttpConnection::linger() {
  disarm_request_timer();
  if (peer_closed_) {
    return close();
  }
  lingering_ = true;
  shutdown(fd_, SHUT_WR);
  timeval linger = timeval_of(kLingerMs);
  event_add(read_event_.get(), &linger);
  reading_ = true;
  evtimer_add(linger_timer_.get(), &linger);
}

void HttpConnection::close() { server_.closed(this); }

}  // namespace dq
