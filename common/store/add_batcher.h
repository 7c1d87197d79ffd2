// AddBatcher: the adds of one event-loop turn that go to the same shard
// leave as one add.lua call (common/store/lua/add.lua takes any number of jobs).
// A one-job call cost Redis ~3x the job's own writes (TIME, the timer wake
// check, six counter calls, the script's own start): summed over a call,
// they are paid once. Nothing waits for a batch to fill: the batch leaves at
// the end of the turn in which its first add arrived, unless a call to the
// same shard is still in flight. Then it leaves when that call's reply
// arrives (group commit): the adds would only have queued in Redis behind
// it, and meanwhile more join the same call. So an add alone is sent as
// soon as it would have been, and adds that arrive together or while Redis
// works (many connections, a batch request) share a call.
#pragma once

#include <event2/event.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/core/event_handles.h"
#include "common/redis/async_shard.h"
#include "common/store/add_request.h"
#include "common/store/script_calls.h"

namespace dq {

class AddBatcher {
 public:
  // The call's reply (or why it failed) and this job's place in it.
  using JobDone = std::function<void(Result<const redisReply*> reply, size_t index)>;

  explicit AddBatcher(event_base* base);
  ~AddBatcher();
  AddBatcher(const AddBatcher&) = delete;
  AddBatcher& operator=(const AddBatcher&) = delete;

  // Queues one job for `writer`. Jobs share a call only when their next
  // home (common/store/placement.h; "" for nearly every add) is the same.
  void add(AsyncShard* writer, const std::string& next_home, const AddRequest& request,
           JobDone done);
  // Sends every queued call whose shard has no call in flight; with
  // `all`, every queued call (at shutdown).
  void flush(bool all = false);

 private:
  struct Batch {
    AsyncShard* writer = nullptr;
    std::string next_home;
    ScriptCall call;
    std::vector<JobDone> done;
    size_t bytes = 0;
  };
  void send(Batch batch);
  void on_reply(AsyncShard* writer);
  static void on_flush(evutil_socket_t fd, short what, void* arg);

  std::vector<Batch> batches_;  // one per (writer, next home): a few at most
  UniqueEvent flush_event_;
  bool scheduled_ = false;
  std::map<AsyncShard*, int> in_flight_;  // add.lua calls awaiting replies, per shard
  // Reply callbacks may outlive this batcher (a shard stopped after it).
  std::shared_ptr<AddBatcher*> self_ = std::make_shared<AddBatcher*>(this);
};

}  // namespace dq
