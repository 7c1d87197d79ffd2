// ShardCalls: every Redis call the consumer makes about the jobs of one
// shard, asynchronous on the consumer's loop (common/store/async_job_store.h),
// so a slow or stalled shard delays only its own jobs and the loop never
// waits on Redis. The loop asks for a reserve and hands over finished
// deliveries; this reserves, acks (every delivery that finished while the
// last ack call was out, in one ack.lua call), records failures (one
// fail.lua call out at a time), logs each
// attempt (one notify log write per batch), and hands reserved jobs back
// through a callback.
//
// Outcomes are never guessed: a reserve whose reply is lost is released
// (release.lua), so its jobs go back at once and no attempt is counted; an
// ack or fail whose reply is lost is sent again until it is answered or its
// lease is long over (both are idempotent, keyed by the lease).
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/alerts/dead_letter_alerts.h"
#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/core/repeat_log.h"
#include "common/registry/registry.h"
#include "common/store/async_job_store.h"
#include "consumer/delivery.h"

namespace dq {

// A delivery that ended, to be recorded in Redis.
struct Outcome {
  Job job;  // attempts is this attempt's number
  Lease lease;
  std::shared_ptr<const Topic> topic;  // never null
  TransferResult result;
  int64_t latency_ms = 0;
  int64_t give_up_at_ms = 0;  // monotonic: stop retrying the record after this
  int64_t next_try_ms = 0;    // monotonic: when a lost record is sent again
  // false: the receiver's circuit breaker stopped this topic's calls, so the
  // failure does not use an attempt (consumer/circuit_keeper.h).
  bool count_attempt = true;
  // Why a circuit held the job ("" none): its dead-letter reason should its
  // max_retry_duration_s run out (fail.lua).
  std::string held_reason;
};

// What one reserve brought back.
struct ReserveReply {
  bool ok = false;  // false: Redis error (the shard is retried later)
  std::string reserve_id;
  std::vector<ReservedJob> jobs;
  int64_t ready_left = 0;
  int asked = 0;  // slots that were promised to this reserve
  std::vector<LateDeath> late_deaths;  // dead-lettered by their topic's late policy
  // Capped topics asked about (probe): jobs still ready in each after the
  // reserve (LLEN; absent when the shard did not answer).
  std::map<std::string, int64_t> waiting;
};

class ShardCalls {
 public:
  using Reserved = std::function<void(size_t shard, ReserveReply reply)>;

  ShardCalls(const Config& config, size_t shard, event_base* base, AsyncJobStore& store,
             std::string reserve_prefix, Reserved reserved);
  ShardCalls(const ShardCalls&) = delete;
  ShardCalls& operator=(const ShardCalls&) = delete;

  // A reserve is out (or a lost one is being released): no other is asked for.
  bool reserving() const { return reserving_; }
  // Starts a reserve; its reply goes to `reserved`.
  // `probe`: capped topics whose ready jobs to count after it (ReserveReply::waiting).
  void reserve(const std::vector<ReserveSlot>& slots, int most_jobs,
               std::vector<std::string> probe = {});
  // Gives back the jobs of an answered reserve that will not be delivered
  // (the consumer is stopping): no attempt counted.
  void give_back(const std::string& reserve_id);
  // A job the reserve dead-lettered as late: its dead-letter alert, as for
  // any job that dies.
  void report_late_death(const Topic& topic, const LateDeath& death);
  void record(Outcome outcome);
  // Outcomes not yet recorded (queued, out, or waiting to be sent again),
  // and reserves being given back.
  size_t unfinished() const { return unrecorded_ + giving_back_; }
  // Called every loop tick: records whose reply was lost are sent again.
  void tick(int64_t now_ms);
  // The consumer stops: lost records and releases are retried until then.
  void stop(int64_t deadline_ms);
  // At exit: says what was not recorded.
  void report_unfinished() const;

 private:
  static void on_flush(evutil_socket_t fd, short events, void* self);
  void flush();
  void send_acks();
  void acked(std::vector<Outcome> batch, std::vector<Result<AckOutcome>> results);
  void send_next_fail();
  void send_fail(Outcome outcome);
  void failed(Outcome outcome, int64_t delay, int most, const std::string& error,
              const FailDeferral& deferral, Result<FailOutcome> result);
  void retry_later(Outcome outcome);
  void reserve_answered(const std::string& reserve_id, int most_jobs,
                        std::vector<std::string> probe, Result<ReserveBatch> reserved);
  void count_waiting(ReserveReply reply, std::vector<std::string> probe);
  // release.lua until it is answered (or the stop's deadline passed), then `then`.
  void release_lost(std::string reserve_id, std::function<void()> then);
  void send_release(std::string reserve_id, std::function<void()> then);
  void done_recording(size_t count);
  void log_attempt(const Outcome& outcome, const std::string& what);
  // The delivery and lateness metric keys of a topic, built once.
  const std::pair<std::string, std::string>& metric_keys(const std::string& topic);

  const Config& config_;
  size_t shard_;
  event_base* base_;
  AsyncJobStore& store_;
  AsyncShard* connection_;  // the store's connection to this shard, for plain commands
  std::string reserve_prefix_;
  Reserved reserved_;
  uint64_t reserve_seq_ = 0;
  std::string answered_reserve_;  // the last reserve whose reply arrived
  RepeatLog reserve_errors_;      // reserve failures: once, then with a count
  DeadLetterAlerts alerts_;
  UniqueEvent flush_;  // active once per loop turn that has outcomes to send
  bool flush_queued_ = false;

  bool reserving_ = false;
  std::vector<Outcome> acks_waiting_;
  std::deque<Outcome> fails_waiting_;
  bool failing_ = false;           // a fail call is out
  bool acking_ = false;            // an ack call is out
  std::vector<Outcome> retrying_;  // lost records, sent again at next_try_ms
  size_t unrecorded_ = 0;
  struct Release {
    std::string reserve_id;
    std::function<void()> then;
    int64_t next_try_ms = 0;
  };
  std::vector<Release> releases_again_;  // releases whose reply was lost
  size_t giving_back_ = 0;
  bool stopping_ = false;
  int64_t stop_deadline_ms_ = 0;
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> metric_keys_;
};

}  // namespace dq
