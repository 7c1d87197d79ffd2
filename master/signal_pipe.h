// SignalPipe: the self-pipe trick. Handlers only write the signal number to a
// non-blocking pipe; the master's loop polls the read end and handles the
// signals in ordinary code, where allocating and logging are safe.
#pragma once

#include <signal.h>

#include <initializer_list>
#include <vector>

#include "common/core/status.h"

namespace dq {

class SignalPipe {
 public:
  SignalPipe() = default;
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Creates the pipe and routes these signals to it; ignores SIGPIPE.
  Status install(std::initializer_list<int> signals);
  int read_fd() const { return read_fd_; }
  std::vector<int> drain();  // the signals that arrived since the last call

  // Around fork(): block every signal so a child never runs the master's
  // handlers; the child then restores defaults and unblocks.
  static void block_all(sigset_t* saved);
  static void restore(const sigset_t& saved);
  void reset_in_child();  // default handlers, unblocked, pipe closed

 private:
  std::vector<int> signals_;
  int read_fd_ = -1;
  int write_fd_ = -1;
};

}  // namespace dq
