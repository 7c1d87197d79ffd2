// Acceptor (see acceptor.h).
#include "server/acceptor.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "server/connection_budget.h"

namespace dq {
namespace {

// Accepts per readable event: the loop serves the open connections between turns.
constexpr int kAcceptsPerTurn = 64;
// After accept() ran out of descriptors that no idle connection could free.
constexpr int kRetryMs = 200;
// A pause warning at most this often, with the number of pauses since the last one.
constexpr int64_t kPauseLogMs = 10000;

// Errors of one pending connection (Linux passes them on from accept()):
// the next one may be fine.
bool next_may_work(int error) {
  switch (error) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

bool short_of_descriptors(int error) {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

// Pauses of every acceptor of the process, for the throttled warning.
struct PauseLog {
  uint64_t pauses = 0;
  uint64_t logged = 0;
  int64_t logged_ms = 0;
};
PauseLog& pause_log() {
  static PauseLog log;
  return log;
}

}  // namespace

Acceptor::Acceptor(event_base* base, int fd, bool owns_fd, std::string what, OnAccept on_accept)
    : fd_(fd),
      owns_fd_(owns_fd),
      what_(std::move(what)),
      on_accept_(std::move(on_accept)),
      event_(event_new(base, fd, EV_READ | EV_PERSIST, &Acceptor::on_readable, this)),
      retry_(evtimer_new(base, &Acceptor::on_retry, this)) {
  if (event_ != nullptr) {
    event_add(event_.get(), nullptr);
  }
  ConnectionBudget::of_process().add_acceptor(this);
}

Acceptor::~Acceptor() {
  ConnectionBudget::of_process().remove_acceptor(this);
  event_.reset();
  retry_.reset();
  if (owns_fd_) {
    close(fd_);
  }
}

void Acceptor::on_readable(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  static_cast<Acceptor*>(arg)->accept_some();
}

void Acceptor::on_retry(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  static_cast<Acceptor*>(arg)->resume();
}

void Acceptor::accept_some() {
  ConnectionBudget& budget = ConnectionBudget::of_process();
  for (int i = 0; i < kAcceptsPerTurn; ++i) {
    if (!budget.make_room()) {
      return pause("every connection is busy", /*retry=*/false);
    }
    int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) {
        return;
      }
      if (next_may_work(error)) {
        continue;
      }
      if (short_of_descriptors(error) && budget.free_one()) {
        continue;
      }
      return pause(std::strerror(error), /*retry=*/true);
    }
    budget.opened();
    on_accept_(fd);
  }
}

void Acceptor::pause(const char* why, bool retry) {
  if (retry) {
    timeval soon{0, suseconds_t{kRetryMs} * 1000};
    evtimer_add(retry_.get(), &soon);
  }
  if (paused_) {
    return;
  }
  paused_ = true;
  paused_at_ms_ = monotonic_ms();
  event_del(event_.get());
  PauseLog& log = pause_log();
  ++log.pauses;
  if (log.logged_ms != 0 && paused_at_ms_ - log.logged_ms < kPauseLogMs) {
    return;
  }
  ConnectionBudget& budget = ConnectionBudget::of_process();
  err_log().warn(
      "{} port: not accepting for now ({}): {} connections open, the budget is {}; accepting "
      "again when one closes ({} pause(s) since the last such line)",
      what_, why, budget.open(), budget.limit(), log.pauses - log.logged);
  log.logged = log.pauses;
  log.logged_ms = paused_at_ms_;
}

void Acceptor::resume() {
  if (!paused_) {
    return;
  }
  paused_ = false;
  evtimer_del(retry_.get());
  event_add(event_.get(), nullptr);
  err_log().debug("{} port: accepting again after {} ms", what_, monotonic_ms() - paused_at_ms_);
}

}  // namespace dq
