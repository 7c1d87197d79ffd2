// libcurl's multi interface on the consumer's libevent loop (see curl_loop.h).
#include "consumer/curl_loop.h"

#include <vector>

namespace dq {

CurlLoop::CurlLoop(event_base* base, Finished finished)
    : base_(base), multi_(curl_multi_init()), finished_(std::move(finished)) {
  timer_.reset(evtimer_new(base_, &CurlLoop::on_timeout, this));
  curl_multi_setopt(multi_.get(), CURLMOPT_SOCKETFUNCTION, &CurlLoop::on_socket);
  curl_multi_setopt(multi_.get(), CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_.get(), CURLMOPT_TIMERFUNCTION, &CurlLoop::on_timer);
  curl_multi_setopt(multi_.get(), CURLMOPT_TIMERDATA, this);
}

CurlLoop::~CurlLoop() {
  // curl may close its cached connections while it is cleaned up: nothing
  // of this object is told any more.
  curl_multi_setopt(multi_.get(), CURLMOPT_SOCKETFUNCTION, nullptr);
  curl_multi_setopt(multi_.get(), CURLMOPT_TIMERFUNCTION, nullptr);
  sockets_.clear();
  timer_.reset();
}

int CurlLoop::on_socket(CURL* /*easy*/, curl_socket_t fd, int what, void* self, void* /*socket*/) {
  auto* loop = static_cast<CurlLoop*>(self);
  if (what == CURL_POLL_REMOVE) {
    loop->sockets_.erase(fd);  // frees its event (also from inside its own callback)
    return 0;
  }
  std::unique_ptr<Socket>& socket = loop->sockets_[fd];
  if (!socket) {
    socket = std::make_unique<Socket>();
    socket->owner = loop;
    socket->fd = fd;
  }
  short events = EV_PERSIST;
  events |= (what & CURL_POLL_IN) ? EV_READ : 0;
  events |= (what & CURL_POLL_OUT) ? EV_WRITE : 0;
  if (socket->event && socket->events == events) {
    return 0;
  }
  socket->events = events;
  // A new event rather than event_assign on a pending one: libevent allows
  // freeing an event inside its own callback, not re-assigning it.
  socket->event.reset(event_new(loop->base_, fd, events, &CurlLoop::on_ready, socket.get()));
  event_add(socket->event.get(), nullptr);
  return 0;
}

int CurlLoop::on_timer(CURLM* /*multi*/, long timeout_ms, void* self) {
  auto* loop = static_cast<CurlLoop*>(self);
  if (timeout_ms < 0) {
    evtimer_del(loop->timer_.get());
    return 0;
  }
  // 0: at the next turn (curl asks not to be called from inside this callback).
  timeval wait{timeout_ms / 1000, static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
  evtimer_add(loop->timer_.get(), &wait);
  return 0;
}

void CurlLoop::on_ready(evutil_socket_t fd, short events, void* socket) {
  auto* loop = static_cast<Socket*>(socket)->owner;
  int bits =
      ((events & EV_READ) ? CURL_CSELECT_IN : 0) | ((events & EV_WRITE) ? CURL_CSELECT_OUT : 0);
  loop->act(fd, bits);  // may free *socket
}

void CurlLoop::on_timeout(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  static_cast<CurlLoop*>(self)->act(CURL_SOCKET_TIMEOUT, 0);
}

void CurlLoop::act(curl_socket_t fd, int bits) {
  int running = 0;
  curl_multi_socket_action(multi_.get(), fd, bits, &running);
  report_finished();
}

void CurlLoop::read_every_socket() {
  std::vector<curl_socket_t> fds;
  fds.reserve(sockets_.size());
  for (const auto& entry : sockets_) {
    fds.push_back(entry.first);
  }
  int running = 0;
  for (curl_socket_t fd : fds) {
    if (sockets_.count(fd) > 0) {
      // No bits: curl checks the socket itself, as after a poll of it.
      curl_multi_socket_action(multi_.get(), fd, 0, &running);
    }
  }
  report_finished();
}

void CurlLoop::report_finished() {
  int queued = 0;
  while (CURLMsg* message = curl_multi_info_read(multi_.get(), &queued)) {
    if (message->msg == CURLMSG_DONE) {
      finished_(message->easy_handle, message->data.result);
    }
  }
}

}  // namespace dq
