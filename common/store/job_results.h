// What the timer's and consumer's job calls answer (common/store/async_job_store.h;
// the scripts are common/store/lua/*.lua).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/store/end_memory.h"
#include "common/store/job.h"

namespace dq {

struct ReservedJob {
  size_t shard = 0;
  Job job;  // attempts is the number of this attempt (1 for the first)
  Lease lease;
};

// A job the reserve dead-lettered by its topic's late policy: its alert is
// the consumer's to send.
struct LateDeath {
  std::string topic;
  std::string id;
  int attempts = 0;
  std::string reason;
};

struct ReserveBatch {
  std::vector<ReservedJob> jobs;
  std::vector<LateDeath> late_deaths;
  int64_t ready_left = 0;    // jobs still ready in the topics asked for
  int64_t redis_now_ms = 0;  // Redis's clock when it leased them
};

// A topic whose delivery window is closed, for promote: its due jobs are
// held, not made ready, due again at opens_at_ms + k x spacing_ms
// (promote.lua).
struct WindowHold {
  std::string topic;
  int64_t opens_at_ms = 0;
  double spacing_ms = 0;  // 0: every held job at the opening
};

struct PromoteResult {
  int moved = 0;
  int held = 0;                        // due jobs held for their topic's delivery window
  std::optional<int64_t> next_due_ms;  // earliest job still delayed
  int64_t redis_now_ms = 0;            // Redis's clock when it ran
};

struct ExpiredResult {
  int requeued = 0;
  // "topic:id" and attempts of the jobs dead-lettered on this pass
  std::vector<std::pair<std::string, int>> dead;
};

// kExpired: its next attempt would have come after its ttl or expire_at.
enum class FailOutcome { kRescheduled, kDead, kStale, kDeferred, kExpired };

// How a failed attempt counts (fail.lua): the answer's Retry-After wait and
// the topic's max_deferrals (retry_after_ms < 0: the answer had none); and
// count_attempt false when the receiver's circuit breaker stopped the topic's
// calls: the job waits for it with its attempts as before, never dead.
struct FailDeferral {
  int64_t retry_after_ms = -1;
  int max_deferrals = 0;
  bool count_attempt = true;
  // The topic has a dead-letter callback: a job that dies gets its outbox
  // entry in the same script (common/store/dead_callbacks.h).
  bool dead_callback = false;
  // How long a job that dies or expires is remembered (common/store/end_memory.h).
  EndMemory end_memory;
  // The topic's max_retry_duration_s in ms (0: no limit), and why the job was
  // held back when a circuit held it (its dead-letter reason if it dies).
  int64_t max_retry_ms = 0;
  std::string held_reason;
};

// What the lease check needs of a topic whose jobs may die there, for the
// topics that differ from the default: no dead-letter callback and the
// default dedup window (requeue_expired_call).
struct ExpiryTopic {
  std::string topic;
  bool dead_callback = false;
  EndMemory end_memory;
};
enum class AckOutcome { kAcked, kAckedLate, kGone };

// What a run-now found (run_now.lua): the job's state and due time after it.
struct RunNow {
  JobState state = JobState::kDelayed;
  int64_t due_ms = 0;
  bool moved = false;  // it was delayed or retrying and is due now; else due already
};

// What an update did (update.lua): changed a pending job in place, or added
// it (created) when there was none.
struct Updated {
  bool created = false;
  JobState previous = JobState::kDelayed;  // the state it was in (not created)
  int64_t due_ms = 0;
  std::string incarnation;  // the new version's (not created)
  // created false and ended set: no job was pending and the same body ran
  // within its topic's dedup window (an add's "ended", nothing changed).
  std::string ended;
  int64_t ended_at_ms = 0;
};

// One ack of ack_all: views of the caller's strings (no copies per job),
// valid for the call.
struct AckRequest {
  AckRequest(std::string_view job_topic, std::string_view job_id, const Lease& job_lease,
             std::string memory = "0", std::string delivery_detail = "")
      : topic(job_topic),
        id(job_id),
        lease(job_lease),
        end_memory(std::move(memory)),
        detail(std::move(delivery_detail)) {}

  std::string_view topic;
  std::string_view id;
  const Lease& lease;
  // How long the delivered job is remembered (common/store/end_memory.h), so
  // a retried add of it is answered, not run again, and GET answers "done";
  // detail: delivery_detail's, for the topic's history.
  std::string end_memory;
  std::string detail;
  // A pull worker's ack: counts only under the current lease (ack.lua).
  bool strict = false;
};

// The wake lists the timer and the consumers block on (BLPOP).
enum class WakeList { kTimer, kConsumer };

}  // namespace dq
