// Acceptor: accepts connections on a listening socket within the process's
// ConnectionBudget (server/connection_budget.h). On a readable socket it
// accepts a few at a time, each only after the budget made room; when it
// cannot (every connection busy, or accept() short of descriptors and no idle
// connection to close) it pauses: the listening event is removed, so the loop
// does not spin on a socket whose connections wait, and one warning with the
// counts is logged per pause. It resumes when a connection closes, or after
// a short retry when something other than connections held the descriptors.
#pragma once

#include <event2/event.h>

#include <functional>
#include <memory>
#include <string>

#include "common/core/event_handles.h"

namespace dq {

class Acceptor {
 public:
  using OnAccept = std::function<void(evutil_socket_t fd)>;
  // `what` names the port in log lines ("HTTP", "legacy"). The accepted
  // sockets are non-blocking and CLOEXEC; on_accept owns them. owns_fd:
  // close fd with the acceptor.
  Acceptor(event_base* base, int fd, bool owns_fd, std::string what, OnAccept on_accept);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  bool ok() const { return event_ != nullptr; }
  // Called by the budget when a connection closed.
  void resume();

 private:
  static void on_readable(evutil_socket_t fd, short what, void* arg);
  static void on_retry(evutil_socket_t fd, short what, void* arg);
  void accept_some();
  void pause(const char* why, bool retry);

  int fd_;
  bool owns_fd_;
  std::string what_;
  OnAccept on_accept_;
  UniqueEvent event_;
  UniqueEvent retry_;
  bool paused_ = false;
  int64_t paused_at_ms_ = 0;
};

}  // namespace dq
