// AddBatcher: the adds of one event-loop turn that go to the same shard
// leave as one add.lua call (common/lua/add.lua takes any number of jobs).
// A one-job call cost Redis ~3x the job's own writes (TIME, the timer wake
// check, six counter calls, the script's own start): summed over a call,
// they are paid once. Nothing waits for a batch to fill: the batch leaves at
// the end of the turn in which its first add arrived, so an add alone is
// sent as soon as it would have been, and adds that arrive together (many
// connections, a batch request) share a call.
#pragma once

#include <event2/event.h>

#include <functional>
#include <string>
#include <vector>

#include "common/script_calls.h"
#include "server/async_shard.h"
#include "server/job_request.h"

namespace dq {

class AddBatcher {
 public:
  // The call's reply (or why it failed) and this job's place in it.
  using JobDone = std::function<void(Result<const redisReply*> reply, size_t index)>;

  explicit AddBatcher(event_base* base);
  ~AddBatcher();
  AddBatcher(const AddBatcher&) = delete;
  AddBatcher& operator=(const AddBatcher&) = delete;

  // Queues one job for `writer`. Jobs share a call only when their
  // placement verdicts (verify_against, unreachable) are the same.
  void add(AsyncShard* writer, const std::vector<std::string>& verify_against,
           const std::vector<std::string>& unreachable, const AddRequest& request, JobDone done);
  void flush();  // sends every queued call now

 private:
  struct Batch {
    AsyncShard* writer = nullptr;
    std::string verdicts;  // verify_against and unreachable, joined
    ScriptCall call;
    std::vector<JobDone> done;
    size_t bytes = 0;
  };
  void send(Batch batch);
  static void on_flush(evutil_socket_t fd, short what, void* arg);

  std::vector<Batch> batches_;  // one per (writer, verdicts): a few at most
  event* flush_event_;
  bool scheduled_ = false;
};

}  // namespace dq
