// RequestLimits (see request_limits.h).
#include "server/request_limits.h"

#include <event2/buffer.h>
#include <sys/socket.h>

#include <cstring>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"

namespace dq {
namespace {

constexpr char kCannedTail[] = "</BODY></HTML>\n";
constexpr char kCannedHead[] = "\r\n\r\n<HTML><HEAD>\n<TITLE>";

// Position of the last `needle` in `buffer` before `before`, or -1.
ev_ssize_t last_before(evbuffer* buffer, const char* needle, ev_ssize_t before) {
  ev_ssize_t found = -1;
  evbuffer_ptr at = evbuffer_search(buffer, needle, std::strlen(needle), nullptr);
  while (at.pos >= 0 && at.pos < before) {
    found = at.pos;
    evbuffer_ptr_set(buffer, &at, 1, EVBUFFER_PTR_ADD);
    at = evbuffer_search(buffer, needle, std::strlen(needle), &at);
  }
  return found;
}

std::string copy_range(evbuffer* buffer, size_t from, size_t length) {
  std::string text(length, '\0');
  evbuffer_ptr at;
  evbuffer_ptr_set(buffer, &at, from, EVBUFFER_PTR_SET);
  evbuffer_copyout_from(buffer, &at, text.data(), length);
  return text;
}

bool in_rewrite = false;  // our own edits of an output buffer call on_output again

}  // namespace

bool rewrite_canned_error(evbuffer* output, const std::map<int, std::string>& explain) {
  size_t length = evbuffer_get_length(output);
  size_t tail = sizeof(kCannedTail) - 1;
  if (length < tail || copy_range(output, length - tail, tail) != kCannedTail) return false;
  ev_ssize_t page = last_before(output, kCannedHead, static_cast<ev_ssize_t>(length));
  if (page < 0) return false;
  ev_ssize_t start = last_before(output, "HTTP/1.", page);
  if (start < 0) return false;
  // "<TITLE>413 Request Entity Too Large</TITLE>"
  size_t title_at = static_cast<size_t>(page) + sizeof(kCannedHead) - 1;
  std::string title = copy_range(output, title_at, std::min<size_t>(length - title_at, 200));
  title = title.substr(0, title.find("</TITLE>"));
  int status = std::atoi(title.c_str());
  if (status < 400 || status > 599) return false;
  std::string reason =
      title.substr(title.find(' ') == std::string::npos ? title.size() : title.find(' ') + 1);
  auto why = explain.find(status);
  // The reason comes from the page: bytes that are not UTF-8 must not throw
  // (found by fuzz/fuzz_canned_error.cc).
  std::string body =
      Json{{"error", reason + (why != explain.end() ? ": " + why->second : "")}}.dump(
          -1, ' ', false, Json::error_handler_t::replace) +
      "\n";
  // Only printable ASCII in the status line, whatever the page said.
  for (char& c : reason) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  std::string answer = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                       "\r\nContent-Type: application/json\r\nConnection: close\r\n"
                       "Content-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body;
  evbuffer* kept = evbuffer_new();
  in_rewrite = true;
  evbuffer_remove_buffer(output, kept, static_cast<size_t>(start));
  evbuffer_drain(output, evbuffer_get_length(output));
  evbuffer_add_buffer(output, kept);
  evbuffer_add(output, answer.data(), answer.size());
  in_rewrite = false;
  evbuffer_free(kept);
  return true;
}

RequestLimits::RequestLimits(evhttp* http, const Config& config) : config_(config) {
  // libevent answers 413 for a body over its limit, 400 for a head over it
  // (and for anything that is not HTTP).
  explain_[413] = "a request body is at most " + std::to_string(config.max_request_bytes) +
                  " bytes ([server] max_request_bytes)";
  explain_[400] = "not a valid HTTP request, or its request line and headers are over " +
                  std::to_string(config.max_header_bytes) + " bytes ([server] max_header_bytes)";
  evhttp_set_max_body_size(http, static_cast<ev_ssize_t>(config.max_request_bytes));
  evhttp_set_max_headers_size(http, static_cast<ev_ssize_t>(config.max_header_bytes));
  timeval idle{config.idle_timeout_ms / 1000, (config.idle_timeout_ms % 1000) * 1000};
  evhttp_set_timeout_tv(http, &idle);
  evhttp_set_bevcb(http, &RequestLimits::make_bufferevent, this);
}

bufferevent* RequestLimits::make_bufferevent(event_base* base, void* arg) {
  auto* self = static_cast<RequestLimits*>(arg);
  bufferevent* stream = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  if (stream == nullptr) return nullptr;
  self->watches_[bufferevent_get_input(stream)] = Watch{stream};  // a reused address starts afresh
  evbuffer_add_cb(bufferevent_get_input(stream), &RequestLimits::on_input, self);
  evbuffer_add_cb(bufferevent_get_output(stream), &RequestLimits::on_output, self);
  return stream;
}

void RequestLimits::on_input(evbuffer* input, const evbuffer_cb_info* info, void* arg) {
  if (info->n_added == 0) return;
  auto* self = static_cast<RequestLimits*>(arg);
  auto watch = self->watches_.find(input);
  if (watch == self->watches_.end()) return;
  int64_t now = monotonic_ms();
  if (watch->second.request_started_ms == 0) {
    watch->second.request_started_ms = now;
  } else if (now - watch->second.request_started_ms > self->config_.request_timeout_ms) {
    // A request trickling in: end the connection (evhttp sees it close).
    request_log().info("closing a connection whose request took over {} ms to arrive",
                       self->config_.request_timeout_ms);
    shutdown(bufferevent_getfd(watch->second.stream), SHUT_RDWR);
  }
}

void RequestLimits::on_output(evbuffer* output, const evbuffer_cb_info* info, void* arg) {
  if (in_rewrite || info->n_added == 0) return;
  rewrite_canned_error(output, static_cast<RequestLimits*>(arg)->explain_);
}

std::optional<RequestLimits::Refusal> RequestLimits::admit(evhttp_request* request) {
  evhttp_connection* connection = evhttp_request_get_connection(request);
  bufferevent* stream = evhttp_connection_get_bufferevent(connection);
  Watch& watch = watches_[bufferevent_get_input(stream)];
  watch.stream = stream;
  watch.request_started_ms = 0;  // this one arrived whole; the next starts its own clock
  if (!watch.counted) {
    watch.counted = true;
    ++connections_;
    evhttp_connection_set_closecb(connection, &RequestLimits::on_connection_closed, this);
    if (connections_ > static_cast<size_t>(config_.max_connections)) {
      evhttp_add_header(evhttp_request_get_output_headers(request), "Connection", "close");
      return Refusal{503, "too many connections (" + std::to_string(connections_ - 1) +
                              " open; [server] max_connections is " +
                              std::to_string(config_.max_connections) + "); try again"};
    }
  }
  return std::nullopt;
}

void RequestLimits::on_connection_closed(evhttp_connection* connection, void* arg) {
  auto* self = static_cast<RequestLimits*>(arg);
  bufferevent* stream = evhttp_connection_get_bufferevent(connection);
  auto watch = self->watches_.find(bufferevent_get_input(stream));
  if (watch != self->watches_.end() && watch->second.counted) {
    --self->connections_;
    self->watches_.erase(watch);
  }
}

}  // namespace dq
