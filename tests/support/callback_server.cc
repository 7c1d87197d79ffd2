// CallbackServer on libevent's evhttp (see callback_server.h).
#include "tests/support/callback_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/core/clock.h"
#include "common/core/event_handles.h"

namespace dq::test {

std::string RecordedRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::vector<std::pair<std::string, std::string>> parse_form(const std::string& text) {
  auto decode = [](const std::string& part) {
    std::string out;
    for (size_t i = 0; i < part.size(); ++i) {
      if (part[i] == '+') {
        out.push_back(' ');
      } else if (part[i] == '%' && i + 2 < part.size() &&
                 isxdigit(static_cast<unsigned char>(part[i + 1])) &&
                 isxdigit(static_cast<unsigned char>(part[i + 2]))) {
        out.push_back(static_cast<char>(std::stoi(part.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(part[i]);
      }
    }
    return out;
  };
  std::vector<std::pair<std::string, std::string>> fields;
  size_t start = 0;
  while (start < text.size()) {
    size_t amp = text.find('&', start);
    std::string pair =
        text.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    size_t eq = pair.find('=');
    if (!pair.empty()) {
      fields.emplace_back(decode(pair.substr(0, eq)),
                          eq == std::string::npos ? "" : decode(pair.substr(eq + 1)));
    }
    if (amp == std::string::npos) {
      break;
    }
    start = amp + 1;
  }
  return fields;
}

std::string RecordedRequest::form_field(const std::string& name) const {
  for (const auto& field : parse_form(body)) {
    if (field.first == name) {
      return field.second;
    }
  }
  return {};
}

std::string RecordedRequest::param(const std::string& name) const {
  struct evkeyvalq params;
  std::string result;
  if (evhttp_parse_query_str(query.c_str(), &params) == 0) {
    const char* value = evhttp_find_header(&params, name.c_str());
    if (value) {
      result = value;
    }
  }
  evhttp_clear_headers(&params);
  return result;
}

struct PendingReply {
  CallbackServer::Impl* impl = nullptr;
  evhttp_request* request = nullptr;
  evhttp_connection* connection = nullptr;
  int status = 200;
  std::string location;
  std::string body;
  bool cancelled = false;
  std::string retry_after;
  size_t index = 0;  // in Impl::requests
};

struct CallbackServer::Impl {
  dq::UniqueEventBase base;
  dq::UniqueEvhttp http;
  int port = 0;
  std::thread thread;

  mutable std::mutex mutex;
  mutable std::condition_variable arrived;
  std::vector<RecordedRequest> requests;
  size_t open = 0;
  size_t most_open = 0;
  Responder responder;
  // Delayed replies by connection, so a client that hangs up cancels its reply.
  std::map<evhttp_connection*, PendingReply*> pending;
  // Every delayed reply whose timer has not fired yet (cancelled or not): the
  // destructor frees them when the loop stops before their timers.
  std::set<PendingReply*> unfired;

  static void on_request(evhttp_request* request, void* arg);
  static void on_delay_done(evutil_socket_t, short, void* arg);
  static void on_connection_closed(evhttp_connection* connection, void* arg);
  // A request's answer was sent (answered) or will never be.
  void closed(size_t index, bool answered) {
    std::lock_guard<std::mutex> lock(mutex);
    --open;
    requests[index].answered = answered;
  }
};

namespace {

void send_reply(evhttp_request* request, int status, const std::string& location,
                const std::string& text, const std::string& retry_after = "") {
  dq::UniqueEvbuffer body(evbuffer_new());
  if (text.empty()) {
    evbuffer_add_printf(body.get(), "{\"status\":%d}", status);
  } else {
    evbuffer_add(body.get(), text.data(), text.size());
  }
  evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type", "application/json");
  if (!location.empty()) {
    evhttp_add_header(evhttp_request_get_output_headers(request), "Location", location.c_str());
  }
  if (!retry_after.empty()) {
    evhttp_add_header(evhttp_request_get_output_headers(request), "Retry-After",
                      retry_after.c_str());
  }
  evhttp_send_reply(request, status, status < 300 ? "OK" : "Error", body.get());
}

const char* method_name(evhttp_cmd_type type) {
  switch (type) {
    case EVHTTP_REQ_GET:
      return "GET";
    case EVHTTP_REQ_POST:
      return "POST";
    case EVHTTP_REQ_PUT:
      return "PUT";
    case EVHTTP_REQ_DELETE:
      return "DELETE";
    case EVHTTP_REQ_HEAD:
      return "HEAD";
    default:
      return "OTHER";
  }
}

}  // namespace

void CallbackServer::Impl::on_connection_closed(evhttp_connection* connection, void* arg) {
  auto* impl = static_cast<Impl*>(arg);
  auto it = impl->pending.find(connection);
  if (it != impl->pending.end()) {
    it->second->cancelled = true;
    impl->closed(it->second->index, false);
    impl->pending.erase(it);
  }
}

void CallbackServer::Impl::on_delay_done(evutil_socket_t, short, void* arg) {
  std::unique_ptr<PendingReply> reply(static_cast<PendingReply*>(arg));
  reply->impl->unfired.erase(reply.get());
  if (reply->cancelled) {
    return;
  }
  reply->impl->pending.erase(reply->connection);
  send_reply(reply->request, reply->status, reply->location, reply->body, reply->retry_after);
  reply->impl->closed(reply->index, true);
}

void CallbackServer::Impl::on_request(evhttp_request* request, void* arg) {
  auto* impl = static_cast<Impl*>(arg);
  RecordedRequest record;
  record.arrived_ms = now_ms();
  record.method = method_name(evhttp_request_get_command(request));
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
  if (evhttp_uri_get_path(uri)) {
    record.path = evhttp_uri_get_path(uri);
  }
  if (evhttp_uri_get_query(uri)) {
    record.query = evhttp_uri_get_query(uri);
  }
  evkeyvalq* headers = evhttp_request_get_input_headers(request);
  for (evkeyval* header = headers->tqh_first; header; header = header->next.tqe_next) {
    std::string name = header->key;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    record.headers[name] = header->value;
  }
  evbuffer* input = evhttp_request_get_input_buffer(request);
  size_t length = evbuffer_get_length(input);
  record.body.resize(length);
  if (length) {
    evbuffer_copyout(input, record.body.data(), length);
  }

  CallbackAnswer answer;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    n = impl->requests.size();
    impl->most_open = std::max(impl->most_open, ++impl->open);
    if (impl->responder) {
      answer = impl->responder(record, n);
    }
    impl->requests.push_back(std::move(record));
  }
  impl->arrived.notify_all();

  if (answer.hang_up) {
    // Shut the socket down under evhttp: it sees the connection fail and
    // frees the request itself, as when a callback host crashes mid-request.
    bufferevent* stream = evhttp_connection_get_bufferevent(evhttp_request_get_connection(request));
    shutdown(bufferevent_getfd(stream), SHUT_RDWR);
    impl->closed(n, false);
    return;
  }
  if (answer.delay_ms <= 0) {
    send_reply(request, answer.status, answer.location, answer.body, answer.retry_after);
    impl->closed(n, true);
    return;
  }
  auto* reply = new PendingReply{impl,
                                 request,
                                 evhttp_request_get_connection(request),
                                 answer.status,
                                 answer.location,
                                 answer.body,
                                 false,
                                 answer.retry_after,
                                 n};
  impl->pending[reply->connection] = reply;
  impl->unfired.insert(reply);
  evhttp_connection_set_closecb(reply->connection, &Impl::on_connection_closed, impl);
  timeval delay{answer.delay_ms / 1000, static_cast<suseconds_t>(answer.delay_ms % 1000) * 1000};
  event_base_once(impl->base.get(), -1, EV_TIMEOUT, &Impl::on_delay_done, reply, &delay);
}

CallbackServer::CallbackServer(const std::string& bind_host, int port)
    : impl_(std::make_unique<Impl>()) {
  evthread_use_pthreads();
  impl_->base.reset(event_base_new());
  impl_->http.reset(evhttp_new(impl_->base.get()));
  evhttp_set_allowed_methods(impl_->http.get(), EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                                    EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD);
  evhttp_set_gencb(impl_->http.get(), &Impl::on_request, impl_.get());
  evhttp_bound_socket* bound =
      evhttp_bind_socket_with_handle(impl_->http.get(), bind_host.c_str(), port);
  if (!bound) {
    throw std::runtime_error("CallbackServer: cannot bind " + bind_host);
  }
  sockaddr_in address{};
  socklen_t size = sizeof(address);
  getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&address), &size);
  impl_->port = ntohs(address.sin_port);
  impl_->thread =
      std::thread([base = impl_->base.get()] { event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY); });
}

CallbackServer::~CallbackServer() {
  event_base_loopbreak(impl_->base.get());
  impl_->thread.join();
  impl_->http.reset();  // runs the close callbacks, which still use pending replies
  for (PendingReply* reply : impl_->unfired) {
    delete reply;
  }
  impl_->base.reset();
}

int CallbackServer::port() const { return impl_->port; }

std::string CallbackServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(impl_->port) + path;
}

void CallbackServer::set_responder(Responder responder) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->responder = std::move(responder);
}

void CallbackServer::answer_with(std::vector<int> statuses, int then) {
  set_responder([statuses = std::move(statuses), then](const RecordedRequest&, size_t n) {
    CallbackAnswer answer;
    answer.status = n < statuses.size() ? statuses[n] : then;
    return answer;
  });
}

std::vector<RecordedRequest> CallbackServer::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->requests;
}

size_t CallbackServer::open_now() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->open;
}

size_t CallbackServer::most_open() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->most_open;
}

size_t CallbackServer::count() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->requests.size();
}

bool CallbackServer::wait_for(size_t count, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  return impl_->arrived.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                 [&] { return impl_->requests.size() >= count; });
}

}  // namespace dq::test
