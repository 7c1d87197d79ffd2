// ShardSet: the async shards (common/redis/async_shard.h) an operator read or
// action fans out over, on the caller's event loop, and the two tools every
// such operation is built from:
// - ask(): one command or script to one shard, answered by a deadline
//   whatever the shard does (a stalled shard answers "did not answer in
//   time" at the deadline; its late reply is dropped);
// - fan_out(): a part per shard started at once, done when every part has
//   answered.
// So an operation over all shards answers within [redis] command_timeout_ms
// of its start, names the shards that did not answer, and never blocks the
// loop: other requests on it are not slowed at all.
//
// The API server lends its own connections (AsyncJobStore); dqctl, dq-admin and
// tests own theirs (OwnedShards). Callers that want to wait run the
// operation under common/core/loop_waiter.h.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/status.h"
#include "common/redis/async_shard.h"
#include "common/redis/script_call.h"

namespace dq {

struct ShardSet {
  event_base* base = nullptr;
  std::vector<AsyncShard*> shards;
  std::vector<std::string> names;  // "host:port", parallel to shards
  int timeout_ms = 2000;           // each shard's part: [redis] command_timeout_ms
  size_t size() const { return shards.size(); }
};

// The monotonic ms by which the parts of an operation starting now answer.
int64_t deadline_after(int timeout_ms);

// Sends argv to shard `index`; `done` runs by deadline_ms (monotonic) at the
// latest: late, with Status(late, "redis shard X did not answer in time").
void ask(const ShardSet& set, size_t index, const std::vector<std::string>& argv,
         int64_t deadline_ms, AsyncShard::ReplyCallback done, Code late = Code::kUnavailable);
// The same for a script (FCALL, the library loaded first when Redis has not got it). A write whose answer
// is late may have run: late defaults to kUnknown.
void ask(const ShardSet& set, size_t index, ScriptCall call, int64_t deadline_ms,
         AsyncShard::ReplyCallback done, Code late = Code::kUnknown);

// Sends every command to shard `index` at once (pipelined: one round trip),
// each by deadline_ms. each(k, reply) sees the k-th reply while it is valid;
// done() follows, with the first failure if any (each() is then not called
// for the rest).
void ask_all(const ShardSet& set, size_t index,
             const std::vector<std::vector<std::string>>& commands, int64_t deadline_ms,
             std::function<void(size_t, const redisReply*)> each, std::function<void(Status)> done);

// Starts part(i, answer) for every shard i at once; done(results) runs once
// every part has answered (in shard order). With no shards, done runs at once.
template <typename T>
void fan_out(size_t count, const std::function<void(size_t, std::function<void(Result<T>)>)>& part,
             std::function<void(std::vector<Result<T>>)> done) {
  struct State {
    std::vector<std::optional<Result<T>>> answers;
    size_t left = 0;
    std::function<void(std::vector<Result<T>>)> done;
  };
  auto state = std::make_shared<State>();
  state->answers.resize(count);
  state->left = count + 1;  // +1 until every part has started
  state->done = std::move(done);
  auto finish_one = [state]() {
    if (--state->left > 0) {
      return;
    }
    std::vector<Result<T>> out;
    out.reserve(state->answers.size());
    for (auto& answer : state->answers) {
      out.push_back(std::move(*answer));
    }
    state->done(std::move(out));
  };
  for (size_t i = 0; i < count; ++i) {
    part(i, [state, i, finish_one](Result<T> answer) {
      if (state->answers[i]) {
        return;  // answered twice: a bug in the part; keep the first
      }
      state->answers[i].emplace(std::move(answer));
      finish_one();
    });
  }
  finish_one();
}

// "a, b": the names of the shards at `indexes`.
std::string joined_names(const ShardSet& set, const std::vector<size_t>& indexes);

// One AsyncShard per configured shard on the caller's loop (dqctl, dq-admin,
// tests). Connects at once; reconnects on its own.
class OwnedShards {
 public:
  OwnedShards(event_base* base, const std::vector<ShardAddress>& addresses, int connect_timeout_ms,
              int command_timeout_ms);
  OwnedShards(event_base* base, const Config& config);
  OwnedShards(const OwnedShards&) = delete;
  OwnedShards& operator=(const OwnedShards&) = delete;
  ~OwnedShards();

  const ShardSet& set() const { return set_; }
  // Every shard's first connect has ended (up or failed).
  bool first_connects_ended() const;
  // Calls done() once first_connects_ended() (at once when it is), checking
  // every 5 ms; the OwnedShards must outlive the wait.
  void when_connected(std::function<void()> done);

 private:
  static void on_check(evutil_socket_t fd, short what, void* arg);
  std::vector<std::unique_ptr<AsyncShard>> owned_;
  ShardSet set_;
  UniqueEvent check_;
  std::function<void()> connected_;
};

}  // namespace dq
