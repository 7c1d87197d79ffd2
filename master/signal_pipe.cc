// Implements SignalPipe.
#include "master/signal_pipe.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dq {
namespace {

volatile sig_atomic_t g_write_fd = -1;

void on_signal(int signal_number) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal_number);
  if (g_write_fd >= 0) {
    ssize_t ignored = write(g_write_fd, &byte, 1);  // a full pipe already holds a wake-up
    (void)ignored;
  }
  errno = saved;
}

}  // namespace

SignalPipe::~SignalPipe() {
  if (read_fd_ >= 0) {
    close(read_fd_);
  }
  if (write_fd_ >= 0) {
    close(write_fd_);
  }
}

Status SignalPipe::install(std::initializer_list<int> signals) {
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return Status(Code::kInternal, std::string("pipe2: ") + std::strerror(errno));
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  g_write_fd = write_fd_;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal_number : signals) {
    if (sigaction(signal_number, &action, nullptr) != 0) {
      return Status(Code::kInternal, std::string("sigaction: ") + std::strerror(errno));
    }
    signals_.push_back(signal_number);
  }
  signal(SIGPIPE, SIG_IGN);
  return Status::ok();
}

std::vector<int> SignalPipe::drain() {
  std::vector<int> arrived;
  unsigned char buffer[64];
  ssize_t got = 0;
  while ((got = read(read_fd_, buffer, sizeof(buffer))) > 0) {
    for (ssize_t i = 0; i < got; ++i) {
      arrived.push_back(buffer[i]);
    }
  }
  return arrived;
}

void SignalPipe::block_all(sigset_t* saved) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, saved);
}

void SignalPipe::restore(const sigset_t& saved) { sigprocmask(SIG_SETMASK, &saved, nullptr); }

void SignalPipe::reset_in_child() {
  for (int signal_number : signals_) {
    signal(signal_number, SIG_DFL);
  }
  signal(SIGPIPE, SIG_DFL);
  g_write_fd = -1;
  if (read_fd_ >= 0) {
    close(read_fd_);
  }
  if (write_fd_ >= 0) {
    close(write_fd_);
  }
  read_fd_ = write_fd_ = -1;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace dq
