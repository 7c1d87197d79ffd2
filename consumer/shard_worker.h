// ShardWorker: every Redis call the consumer makes to one shard, on a thread
// of its own, so a slow or stalled shard delays only its own jobs and the
// delivery loop (consumer_loop.h) never waits on Redis. The loop asks for a
// reserve and hands over finished deliveries; the worker reserves, acks
// (every delivery that finished since its last turn in one ack.lua call),
// records failures, logs each attempt (one notify log write per batch), and
// posts reserved jobs back, waking the loop with curl_multi_wakeup.
//
// Outcomes are never guessed: a reserve whose reply is lost is released
// (release.lua), so its jobs go back at once and no attempt is counted; an
// ack or fail whose reply is lost is sent again until it is answered or its
// lease is long over (both are idempotent, keyed by the lease).
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/alerts/dead_letter_alerts.h"
#include "common/core/config.h"
#include "common/core/repeat_log.h"
#include "common/registry/registry.h"
#include "common/store/job_store.h"
#include "consumer/delivery.h"
#include "consumer/worker_thread.h"

namespace dq {

// A delivery that ended, for the worker to record in Redis.
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
};

// What one reserve brought back.
struct ReserveReply {
  bool ok = false;  // false: Redis error (the shard is retried later)
  std::vector<ReservedJob> jobs;
  int64_t ready_left = 0;
  int asked = 0;  // slots that were promised to this reserve
  // Capped topics asked about (probe): jobs still ready in each after the
  // reserve (LLEN; absent when the shard did not answer).
  std::map<std::string, int64_t> waiting;
};

class ShardWorker : public WorkerThread {
 public:
  ShardWorker(const Config& config, size_t shard, CURLM* multi, std::string reserve_prefix);
  ~ShardWorker();  // stops and joins
  ShardWorker(const ShardWorker&) = delete;
  ShardWorker& operator=(const ShardWorker&) = delete;

  bool reserving() const { return reserving_.load(); }
  // Starts a reserve; the reply arrives through take_reply().
  // `probe`: capped topics whose ready jobs to count after it (ReserveReply::waiting).
  void reserve(std::vector<ReserveSlot> slots, int most_jobs, std::vector<std::string> probe = {});
  std::optional<ReserveReply> take_reply();
  void record(Outcome outcome);
  // Outcomes not yet recorded (queued or being retried).
  size_t unrecorded() const;

 private:
  void run();
  void do_reserve(const std::vector<ReserveSlot>& slots, int most_jobs,
                  const std::vector<std::string>& probe);
  void record_batch(std::vector<Outcome> batch);
  std::string record_failure(const Outcome& outcome, bool* retry);
  void log_attempt(const Outcome& outcome, const std::string& what);
  // The delivery and lateness metric keys of a topic, built once.
  const std::pair<std::string, std::string>& metric_keys(const std::string& topic);

  const Config& config_;
  size_t shard_;
  CURLM* multi_;
  std::string reserve_prefix_;
  uint64_t reserve_seq_ = 0;
  std::string answered_reserve_;  // the last reserve whose reply arrived
  RepeatLog reserve_errors_;      // reserve failures: once, then with a count
  BlockingJobStore store_;
  DeadLetterAlerts alerts_;

  struct ReserveRequest {
    std::vector<ReserveSlot> slots;
    int most_jobs = 0;
    std::vector<std::string> probe;
  };
  std::optional<ReserveRequest> reserve_request_;
  std::optional<ReserveReply> reply_;
  std::deque<Outcome> outcomes_;
  std::vector<Outcome> retrying_;  // worker thread only
  size_t unrecorded_ = 0;
  std::atomic<bool> reserving_{false};
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> metric_keys_;
};

}  // namespace dq
