// LoopWaiter: how a caller that wants to wait (dqctl, tests, a role's worker
// thread) uses an asynchronous operation: it starts the operation on a
// private event loop and runs that loop until the operation has answered.
// So there is one implementation of each operation, the asynchronous one
// production serves requests with, and waiting callers run that same code.
//
//   LoopWaiter waiter;
//   AsyncStore store(waiter.base(), config);
//   Result<Job> job = waiter.wait<Result<Job>>(
//       [&](auto done) { store.get(topic, id, std::move(done)); });
//
// One waiter per thread; not reentrant (do not call wait() from a callback).
#pragma once

#include <functional>
#include <optional>
#include <utility>

#include "common/core/event_handles.h"

namespace dq {

class LoopWaiter {
 public:
  LoopWaiter() : base_(event_base_new()) {}
  LoopWaiter(const LoopWaiter&) = delete;
  LoopWaiter& operator=(const LoopWaiter&) = delete;

  event_base* base() const { return base_.get(); }

  // Calls start(done) and runs the loop until done(value) has been called
  // (at once, inside start, or later from the loop); returns that value.
  template <typename T>
  T wait(const std::function<void(std::function<void(T)>)>& start) {
    std::optional<T> result;
    start([&result, base = base_.get()](T value) {
      result.emplace(std::move(value));
      event_base_loopbreak(base);
    });
    while (!result) {
      event_base_loop(base_.get(), EVLOOP_ONCE);
    }
    return std::move(*result);
  }

  // Runs the loop for what is ready now (callbacks of finished operations)
  // without blocking.
  void run_ready() { event_base_loop(base_.get(), EVLOOP_NONBLOCK); }

 private:
  UniqueEventBase base_;
};

}  // namespace dq
