// The consumer's Redis calls about one shard's jobs (see shard_calls.h).
#include "consumer/shard_calls.h"

#include <algorithm>

#include "common/core/clock.h"
#include "common/core/host_name.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/retry_policy.h"
#include "common/store/end_memory.h"
#include "common/store/keys.h"

namespace dq {
namespace {

constexpr int64_t kRecordRetryMs = 200;  // an ack, fail or release whose reply was lost
// A reserve stops taking jobs once their bodies pass this many bytes, so a
// batch of big bodies is never one huge reply (it takes at least one job).
constexpr int64_t kReserveBatchBytes = 4 << 20;

}  // namespace

ShardCalls::ShardCalls(const Config& config, size_t shard, event_base* base, AsyncJobStore& store,
                       std::string reserve_prefix, Reserved reserved)
    : config_(config),
      shard_(shard),
      base_(base),
      store_(store),
      connection_(store.connections()[shard]),
      reserve_prefix_(std::move(reserve_prefix)),
      reserved_(std::move(reserved)),
      alerts_(config.sqlite_path) {
  flush_.reset(event_new(base_, -1, 0, &ShardCalls::on_flush, this));
}

void ShardCalls::reserve(const std::vector<ReserveSlot>& slots, int most_jobs,
                         std::vector<std::string> probe) {
  reserving_ = true;
  std::string reserve_id = reserve_prefix_ + std::to_string(++reserve_seq_);
  store_.reserve(shard_, reserve_id, slots, most_jobs, kReserveBatchBytes, answered_reserve_,
                 [this, reserve_id, most_jobs,
                  probe = std::move(probe)](Result<ReserveBatch> reserved) mutable {
                   reserve_answered(reserve_id, most_jobs, std::move(probe), std::move(reserved));
                 });
}

void ShardCalls::reserve_answered(const std::string& reserve_id, int most_jobs,
                                  std::vector<std::string> probe, Result<ReserveBatch> reserved) {
  ReserveReply reply;
  reply.asked = most_jobs;
  reply.reserve_id = reserve_id;
  if (reserved.is_ok()) {
    reserve_errors_.clear();
    answered_reserve_ = reserve_id;  // its lease list is dropped by the next reserve
    reply.ok = true;
    reply.jobs = std::move(reserved->jobs);
    reply.late_deaths = std::move(reserved->late_deaths);
    reply.ready_left = reserved->ready_left;
    count_waiting(std::move(reply), std::move(probe));
    return;
  }
  // The consumer waits before it asks this shard again; a shard that
  // refuses every reserve is logged once, then with a count.
  reserve_errors_.note("consumer: reserve on shard " + config_.shards[shard_].name() +
                       " failed: " + reserved.status().message());
  if (reserved.status().code() != Code::kUnknown) {
    reserving_ = false;
    reserved_(shard_, std::move(reply));
    return;
  }
  // The reserve may have run and leased jobs to nobody: give them back now
  // (no attempt counted), and make sure it takes nothing if it runs later.
  // The shard is not asked again until that is done (or the consumer stops).
  release_lost(reserve_id, [this, reply = std::move(reply)]() mutable {
    reserving_ = false;
    reserved_(shard_, std::move(reply));
  });
}

// Capped topics: how many of their jobs wait here, so the consumer asks for
// permits only for jobs there are (pipelined LLENs, one round trip).
void ShardCalls::count_waiting(ReserveReply reply, std::vector<std::string> probe) {
  if (probe.empty()) {
    reserving_ = false;
    reserved_(shard_, std::move(reply));
    return;
  }
  struct Count {
    ReserveReply reply;
    std::vector<std::string> topics;
    size_t left = 0;
  };
  auto count = std::make_shared<Count>();
  count->reply = std::move(reply);
  count->topics = std::move(probe);
  count->left = count->topics.size();
  for (size_t i = 0; i < count->topics.size(); ++i) {
    connection_->command({"LLEN", keys::ready(count->topics[i])},
                         [this, count, i](Result<const redisReply*> answer) {
                           if (answer.is_ok() && (*answer)->type == REDIS_REPLY_INTEGER) {
                             count->reply.waiting[count->topics[i]] = (*answer)->integer;
                           }
                           if (--count->left == 0) {
                             reserving_ = false;
                             reserved_(shard_, std::move(count->reply));
                           }
                         });
  }
}

void ShardCalls::release_lost(std::string reserve_id, std::function<void()> then) {
  ++giving_back_;
  send_release(std::move(reserve_id), std::move(then));
}

void ShardCalls::send_release(std::string reserve_id, std::function<void()> then) {
  store_.release(
      shard_, reserve_id, [this, reserve_id, then = std::move(then)](Result<int> released) mutable {
        bool over = stopping_ && monotonic_ms() >= stop_deadline_ms_;
        if (!released.is_ok() && !over) {
          // Again shortly (tick()), until Redis answers.
          releases_again_.push_back(
              {std::move(reserve_id), std::move(then), monotonic_ms() + kRecordRetryMs});
          return;
        }
        --giving_back_;
        if (released.is_ok() && *released > 0) {
          err_log().warn("consumer: gave back {} job(s) of reserve {}", *released, reserve_id);
        }
        then();
      });
}

void ShardCalls::give_back(const std::string& reserve_id) {
  release_lost(reserve_id, [] {});
}

void ShardCalls::record(Outcome outcome) {
  ++unrecorded_;
  if (outcome.result.ok) {
    acks_waiting_.push_back(std::move(outcome));
  } else {
    fails_waiting_.push_back(std::move(outcome));
  }
  if (!flush_queued_) {
    // At the end of this loop turn: the outcomes of one turn go together.
    flush_queued_ = true;
    event_active(flush_.get(), EV_TIMEOUT, 1);
  }
}

void ShardCalls::on_flush(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  static_cast<ShardCalls*>(self)->flush();
}

void ShardCalls::flush() {
  flush_queued_ = false;
  send_acks();
  send_next_fail();
}

// One fail call out at a time, as the ack calls: a job's death is recorded
// with its alert queued (DeadLetterAlerts) before the next failure is
// written, so whoever sees the dead count sees the alerts of those deaths.
void ShardCalls::send_next_fail() {
  if (failing_ || fails_waiting_.empty()) {
    return;
  }
  failing_ = true;
  Outcome outcome = std::move(fails_waiting_.front());
  fails_waiting_.pop_front();
  send_fail(std::move(outcome));
}

// One ack call out at a time: what finishes meanwhile goes in the next one,
// so the calls carry more acks each as the rate rises.
void ShardCalls::send_acks() {
  if (acking_ || acks_waiting_.empty()) {
    return;
  }
  acking_ = true;
  std::vector<Outcome> batch = std::move(acks_waiting_);
  acks_waiting_.clear();
  std::vector<AckRequest> acks;
  acks.reserve(batch.size());
  for (const auto& outcome : batch) {
    EndMemory memory = end_memory_of(*outcome.topic);
    acks.push_back({outcome.job.topic, outcome.job.id, outcome.lease, memory.arg(),
                    delivery_detail(memory, static_cast<int>(outcome.result.http_status),
                                    host_name(), outcome.result.answer_head)});
  }
  store_.ack_all(shard_, acks,
                 [this, batch = std::move(batch)](std::vector<Result<AckOutcome>> results) mutable {
                   acked(std::move(batch), std::move(results));
                 });
}

void ShardCalls::acked(std::vector<Outcome> batch, std::vector<Result<AckOutcome>> results) {
  acking_ = false;
  size_t recorded = 0;
  int64_t now = monotonic_ms();
  for (size_t i = 0; i < batch.size(); ++i) {
    Outcome& outcome = batch[i];
    if (results[i].is_ok()) {
      const char* what = *results[i] == AckOutcome::kAcked       ? "ok"
                         : *results[i] == AckOutcome::kAckedLate ? "ok (after its lease expired)"
                                                                 : "ok (already gone)";
      log_attempt(outcome, what);
      ++recorded;
    } else if (is_unreachable(results[i].status()) && now < outcome.give_up_at_ms) {
      retry_later(std::move(outcome));
    } else {
      err_log().error(
          "consumer: ack of {}/{} failed ({}); it will be delivered again after its lease",
          outcome.job.topic, outcome.job.id, results[i].status().message());
      log_attempt(outcome, "ok-unacked");
      ++recorded;
    }
  }
  done_recording(recorded);
  send_acks();
}

void ShardCalls::send_fail(Outcome outcome) {
  const Job& job = outcome.job;
  const Topic& topic = *outcome.topic;
  // The retry wait, lengthened by the topic's jitter (never shortened).
  int64_t delay = jittered_wait_ms(retry_delay_ms(topic, job.attempts, config_.backoff_unit_ms),
                                   topic.retry_jitter);
  int most = max_attempts(topic, config_.default_max_attempts);
  std::string error = outcome.result.error;
  FailDeferral deferral;
  deferral.retry_after_ms = outcome.result.retry_after_ms;
  deferral.max_deferrals = topic.max_deferrals;
  deferral.count_attempt = outcome.count_attempt;
  deferral.dead_callback = !topic.dead_callback.empty();
  deferral.end_memory = end_memory_of(topic);
  deferral.max_retry_ms = topic.max_retry_duration_s * 1000;
  deferral.held_reason = outcome.held_reason;
  if (is_dead_on(topic.dead_on, outcome.result.http_status)) {
    most = 0;  // fail.lua dead-letters it now
    deferral.retry_after_ms = -1;
    deferral.count_attempt = true;
    error += " (dead_on " + std::to_string(outcome.result.http_status) + ": not retried)";
  }
  const std::string topic_name = job.topic;
  const std::string id = job.id;
  const Lease lease = outcome.lease;
  store_.fail(shard_, topic_name, id, lease, delay, most, error, deferral,
              [this, outcome = std::move(outcome), delay, most, error,
               deferral](Result<FailOutcome> result) mutable {
                failed(std::move(outcome), delay, most, error, deferral, std::move(result));
              });
}

void ShardCalls::failed(Outcome outcome, int64_t delay, int most, const std::string& error,
                        const FailDeferral& deferral, Result<FailOutcome> result) {
  failing_ = false;
  const Job& job = outcome.job;
  std::string what;
  if (!result.is_ok()) {
    if (is_unreachable(result.status()) && monotonic_ms() < outcome.give_up_at_ms) {
      retry_later(std::move(outcome));
      send_next_fail();
      return;
    }
    err_log().error("consumer: fail of {}/{} not recorded ({}); it is retried after its lease",
                    job.topic, job.id, result.status().message());
    what = "fail-unrecorded";
  } else if (*result == FailOutcome::kRescheduled) {
    what = (outcome.count_attempt ? "retry in " : "circuit open, uncounted; retry in ") +
           std::to_string(delay) + " ms";
  } else if (*result == FailOutcome::kDeferred) {
    what = "deferred by Retry-After for " + std::to_string(deferral.retry_after_ms) + " ms";
  } else if (*result == FailOutcome::kDead) {
    alerts_.report(*outcome.topic, job.id, job.attempts, error);
    what = most == 0 ? "dead (dead_on)" : "dead";
  } else if (*result == FailOutcome::kExpired) {
    what = "expired (its ttl ends before the next attempt)";
  } else {
    what = "stale";
  }
  log_attempt(outcome, what);
  done_recording(1);
  send_next_fail();
}

void ShardCalls::report_late_death(const Topic& topic, const LateDeath& death) {
  alerts_.report(topic, death.id, death.attempts, death.reason);
}

void ShardCalls::retry_later(Outcome outcome) {
  outcome.next_try_ms = monotonic_ms() + kRecordRetryMs;  // give_up_at_ms stays the real limit
  retrying_.push_back(std::move(outcome));
}

void ShardCalls::done_recording(size_t count) {
  unrecorded_ -= count;
  if (count > 0) {
    notify_log().flush();  // one write per answered call (flush_notify_log_by_caller)
  }
}

void ShardCalls::tick(int64_t now_ms) {
  bool again = false;
  for (auto it = retrying_.begin(); it != retrying_.end();) {
    if (it->next_try_ms <= now_ms) {
      if (it->result.ok) {
        acks_waiting_.push_back(std::move(*it));
      } else {
        fails_waiting_.push_back(std::move(*it));
      }
      it = retrying_.erase(it);
      again = true;
    } else {
      ++it;
    }
  }
  if (again && !flush_queued_) {
    flush_queued_ = true;
    event_active(flush_.get(), EV_TIMEOUT, 1);
  }
  std::vector<Release> releases;
  for (auto it = releases_again_.begin(); it != releases_again_.end();) {
    if (it->next_try_ms <= now_ms) {
      releases.push_back(std::move(*it));
      it = releases_again_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& release : releases) {
    send_release(std::move(release.reserve_id), std::move(release.then));
  }
}

void ShardCalls::stop(int64_t deadline_ms) {
  stopping_ = true;
  stop_deadline_ms_ = deadline_ms;
}

void ShardCalls::report_unfinished() const {
  if (unrecorded_ > 0) {
    err_log().error(
        "consumer: {} outcome(s) on shard {} not recorded at stop; their jobs are delivered "
        "again after their lease",
        unrecorded_, config_.shards[shard_].name());
  }
}

void ShardCalls::log_attempt(const Outcome& outcome, const std::string& what) {
  const Job& job = outcome.job;
  notify_log().info("topic={} id={} attempt={} status={} latency_ms={} result={} error={}",
                    job.topic, job.id, job.attempts, outcome.result.http_status, outcome.latency_ms,
                    what, outcome.result.error.empty() ? "-" : outcome.result.error);
  // Lateness by this host's clock against the due time set by Redis's: a
  // host whose clock is skewed shows the skew here.
  int64_t started_ms = now_ms() - outcome.latency_ms;
  double late_s = static_cast<double>(std::max<int64_t>(0, started_ms - job.due_at_ms)) / 1000.0;
  SharedMetrics& metrics = SharedMetrics::instance();
  const auto& keys = metric_keys(job.topic);
  metrics.observe(keys.first, static_cast<double>(outcome.latency_ms) / 1000.0);
  metrics.observe(keys.second, late_s);
}

const std::pair<std::string, std::string>& ShardCalls::metric_keys(const std::string& topic) {
  auto it = metric_keys_.find(topic);
  if (it != metric_keys_.end()) {
    return it->second;
  }
  if (metric_keys_.size() >= 4096) {
    metric_keys_.clear();  // topics come and go
  }
  auto keys = std::make_pair(SharedMetrics::key({"delivery", topic}),
                             SharedMetrics::key({"lateness", topic}));
  return metric_keys_.emplace(topic, std::move(keys)).first->second;
}

}  // namespace dq
