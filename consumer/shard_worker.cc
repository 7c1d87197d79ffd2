// The consumer's per-shard Redis thread (see shard_worker.h).
#include "consumer/shard_worker.h"

#include <algorithm>
#include <chrono>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/retry_policy.h"
#include "common/store/keys.h"

namespace dq {
namespace {

constexpr int64_t kRecordRetryMs = 200;  // an ack or fail whose reply was lost
// A reserve stops taking jobs once their bodies pass this many bytes, so a
// batch of big bodies is never one huge reply (it takes at least one job).
constexpr int64_t kReserveBatchBytes = 4 << 20;

}  // namespace

ShardWorker::ShardWorker(const Config& config, size_t shard, CURLM* multi,
                         std::string reserve_prefix)
    : config_(config),
      shard_(shard),
      multi_(multi),
      reserve_prefix_(std::move(reserve_prefix)),
      store_(config),
      alerts_(config.sqlite_path) {
  start([this] { run(); });
}

ShardWorker::~ShardWorker() { stop_and_join(); }

void ShardWorker::reserve(std::vector<ReserveSlot> slots, int most_jobs,
                          std::vector<std::string> probe) {
  std::lock_guard<std::mutex> lock(mutex_);
  reserving_.store(true);
  reserve_request_ = ReserveRequest{std::move(slots), most_jobs, std::move(probe)};
  changed_.notify_all();
}

std::optional<ReserveReply> ShardWorker::take_reply() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<ReserveReply> reply = std::move(reply_);
  reply_.reset();
  if (reply) {
    reserving_.store(false);
  }
  return reply;
}

void ShardWorker::record(Outcome outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  outcomes_.push_back(std::move(outcome));
  ++unrecorded_;
  changed_.notify_all();
}

size_t ShardWorker::unrecorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unrecorded_;
}

void ShardWorker::run() {
  while (true) {
    std::optional<ReserveRequest> request;
    std::vector<Outcome> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait_for(lock, std::chrono::milliseconds(kTickMs), [&] {
        return reserve_request_ || !outcomes_.empty() || (stopping_ && unrecorded_ == 0);
      });
      if (stopping_ && (unrecorded_ == 0 || monotonic_ms() >= stop_deadline_ms_)) {
        if (unrecorded_ > 0) {
          err_log().error(
              "consumer: {} outcome(s) on shard {} not recorded at stop; their jobs "
              "are delivered again after their lease",
              unrecorded_, config_.shards[shard_].name());
        }
        return;
      }
      request = std::move(reserve_request_);
      reserve_request_.reset();
      batch.assign(std::make_move_iterator(outcomes_.begin()),
                   std::make_move_iterator(outcomes_.end()));
      outcomes_.clear();
    }
    // Lost replies are tried again once their pause is over.
    int64_t now = monotonic_ms();
    for (auto it = retrying_.begin(); it != retrying_.end();) {
      if (it->next_try_ms <= now) {
        batch.push_back(std::move(*it));
        it = retrying_.erase(it);
      } else {
        ++it;
      }
    }
    if (request) {
      do_reserve(request->slots, request->most_jobs, request->probe);
    }
    if (!batch.empty()) {
      record_batch(std::move(batch));
    }
  }
}

void ShardWorker::do_reserve(const std::vector<ReserveSlot>& slots, int most_jobs,
                             const std::vector<std::string>& probe) {
  ReserveReply reply;
  reply.asked = most_jobs;
  std::string reserve_id = reserve_prefix_ + std::to_string(++reserve_seq_);
  auto reserved =
      store_.reserve(shard_, reserve_id, slots, most_jobs, kReserveBatchBytes, answered_reserve_);
  if (reserved.is_ok()) {
    reserve_errors_.clear();
    answered_reserve_ = reserve_id;  // its lease list is dropped by the next reserve
    reply.ok = true;
    reply.jobs = std::move(reserved->jobs);
    reply.ready_left = reserved->ready_left;
    // Capped topics: how many of their jobs wait here, so the consumer asks
    // for permits only for jobs there are (one pipelined round trip).
    if (!probe.empty()) {
      std::vector<std::vector<std::string>> lengths;
      for (const auto& topic : probe) {
        lengths.push_back({"LLEN", keys::ready(topic)});
      }
      auto answers = store_.shard(shard_).command_all(lengths);
      for (size_t i = 0; i < answers.size() && i < probe.size(); ++i) {
        if (answers[i].is_ok() && (*answers[i])->type == REDIS_REPLY_INTEGER) {
          reply.waiting[probe[i]] = (*answers[i])->integer;
        }
      }
    }
  } else {
    // The consumer waits before it asks this shard again; a shard that
    // refuses every reserve is logged once, then with a count.
    reserve_errors_.note("consumer: reserve on shard " + config_.shards[shard_].name() +
                         " failed: " + reserved.status().message());
    if (reserved.status().code() == Code::kUnknown) {
      // The reserve may have run and leased jobs to nobody: give them back
      // now (no attempt counted), and make sure it takes nothing if it runs
      // later. Retried until Redis answers or the consumer stops.
      while (true) {
        auto released = store_.release(shard_, reserve_id);
        if (released.is_ok()) {
          if (*released > 0) {
            err_log().warn("consumer: gave back {} job(s) of lost reserve {}", *released,
                           reserve_id);
          }
          break;
        }
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (stopping_) {
            break;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(kRecordRetryMs));
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reply_ = std::move(reply);
  }
  curl_multi_wakeup(multi_);
}

void ShardWorker::record_batch(std::vector<Outcome> batch) {
  std::vector<BlockingJobStore::AckRequest> acks;
  std::vector<Outcome*> acked;
  acks.reserve(batch.size());
  acked.reserve(batch.size());
  for (auto& outcome : batch) {
    if (!outcome.result.ok) {
      continue;
    }
    acks.push_back({outcome.job.topic, outcome.job.id, outcome.lease});
    acked.push_back(&outcome);
  }
  std::vector<Outcome> again;
  size_t recorded = 0;
  if (!acks.empty()) {
    std::vector<Result<AckOutcome>> results = store_.ack_all(shard_, acks);
    for (size_t i = 0; i < acked.size(); ++i) {
      Outcome& outcome = *acked[i];
      if (results[i].is_ok()) {
        const char* what = *results[i] == AckOutcome::kAcked       ? "ok"
                           : *results[i] == AckOutcome::kAckedLate ? "ok (after its lease expired)"
                                                                   : "ok (already gone)";
        log_attempt(outcome, what);
        ++recorded;
      } else if (is_unreachable(results[i].status()) && monotonic_ms() < outcome.give_up_at_ms) {
        again.push_back(std::move(outcome));
      } else {
        err_log().error(
            "consumer: ack of {}/{} failed ({}); it will be delivered again after its lease",
            outcome.job.topic, outcome.job.id, results[i].status().message());
        log_attempt(outcome, "ok-unacked");
        ++recorded;
      }
    }
  }
  for (auto& outcome : batch) {
    if (outcome.result.ok) {
      continue;
    }
    bool retry = false;
    std::string what = record_failure(outcome, &retry);
    if (retry) {
      again.push_back(std::move(outcome));
    } else {
      log_attempt(outcome, what);
      ++recorded;
    }
  }
  int64_t next_try = monotonic_ms() + kRecordRetryMs;
  for (auto& outcome : again) {
    outcome.next_try_ms = next_try;  // give_up_at_ms stays the real limit
    retrying_.push_back(std::move(outcome));
  }
  // One write for the batch's notify lines (flush_notify_log_by_caller).
  if (recorded > 0) {
    notify_log().flush();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  unrecorded_ -= recorded;
}

std::string ShardWorker::record_failure(const Outcome& outcome, bool* retry) {
  const Job& job = outcome.job;
  const Topic& topic = *outcome.topic;
  // The retry wait, lengthened by the topic's jitter (never shortened).
  int64_t delay = jittered_wait_ms(retry_delay_ms(topic, job.attempts, config_.backoff_unit_ms),
                                   topic.retry_jitter);
  int most = max_attempts(topic, config_.default_max_attempts);
  std::string error = outcome.result.error;
  FailDeferral deferral{outcome.result.retry_after_ms, topic.max_deferrals, outcome.count_attempt};
  deferral.dead_callback = !topic.dead_callback.empty();
  if (is_dead_on(topic.dead_on, outcome.result.http_status)) {
    most = 0;  // fail.lua dead-letters it now
    deferral.retry_after_ms = -1;
    deferral.count_attempt = true;
    error += " (dead_on " + std::to_string(outcome.result.http_status) + ": not retried)";
  }
  auto failed = store_.fail(shard_, job.topic, job.id, outcome.lease, delay, most, error, deferral);
  if (!failed.is_ok()) {
    if (is_unreachable(failed.status()) && monotonic_ms() < outcome.give_up_at_ms) {
      *retry = true;
      return {};
    }
    err_log().error("consumer: fail of {}/{} not recorded ({}); it is retried after its lease",
                    job.topic, job.id, failed.status().message());
    return "fail-unrecorded";
  }
  if (*failed == FailOutcome::kRescheduled) {
    return (outcome.count_attempt ? "retry in " : "circuit open, uncounted; retry in ") +
           std::to_string(delay) + " ms";
  }
  if (*failed == FailOutcome::kDeferred) {
    return "deferred by Retry-After for " + std::to_string(deferral.retry_after_ms) + " ms";
  }
  if (*failed == FailOutcome::kDead) {
    alerts_.report(*outcome.topic, job.id, job.attempts, error);
    return most == 0 ? "dead (dead_on)" : "dead";
  }
  return "stale";
}

void ShardWorker::log_attempt(const Outcome& outcome, const std::string& what) {
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

const std::pair<std::string, std::string>& ShardWorker::metric_keys(const std::string& topic) {
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
