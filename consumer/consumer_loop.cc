// The consumer's reserve -> deliver -> ack/fail loop (see consumer_loop.h).
#include "consumer/consumer_loop.h"

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"
#include "common/retry_policy.h"
#include "common/stop_flag.h"
#include "consumer/slot_planner.h"
#include "consumer/wake_waiter.h"

namespace dq {
namespace {

constexpr int kIdlePollMs = 200;        // longest sleep; stop and refresh are seen within it
constexpr int64_t kSweepMs = 1000;      // reserve even without a wake this often
constexpr int64_t kRedisRetryMs = 500;  // after a Redis error on a shard
constexpr int64_t kOnlineListMs = 200;  // rebuild the online topic list this often

}  // namespace

ConsumerLoop::ConsumerLoop(const Config& config, std::string title)
    : config_(config),
      title_(std::move(title)),
      store_(config),
      topics_(config.sqlite_path),
      multi_(curl_multi_init()),
      retry_at_ms_(config.shards.size(), 0),
      shard_down_(config.shards.size(), 0) {
  long connections = std::max(1, config.consumer_concurrency);
  // At most `concurrency` transfers run, so a per-host cap equal to it never
  // queues one topic's transfer behind another topic's on the same host.
  curl_multi_setopt(multi_.get(), CURLMOPT_MAX_HOST_CONNECTIONS, connections);
  curl_multi_setopt(multi_.get(), CURLMOPT_MAXCONNECTS, connections);
  waiter_ = std::make_unique<WakeWaiter>(config, multi_.get());
  Status refreshed = topics_.refresh();
  if (!refreshed.is_ok()) err_log().warn("consumer: cannot read topics: {}", refreshed.message());
}

ConsumerLoop::~ConsumerLoop() {
  waiter_.reset();  // joins before the multi handle goes
  for (auto& entry : deliveries_) curl_multi_remove_handle(multi_.get(), entry.first);
}

const std::vector<Topic>& ConsumerLoop::online_topics() {
  int64_t now = monotonic_ms();
  if (online_at_ms_ < 0 || now - online_at_ms_ >= kOnlineListMs) {
    online_ = topics_.online();
    online_at_ms_ = now;
  }
  return online_;
}

CurlEasy ConsumerLoop::take_easy() {
  if (spare_easy_.empty()) return CurlEasy(curl_easy_init());
  CurlEasy easy = std::move(spare_easy_.back());
  spare_easy_.pop_back();
  curl_easy_reset(easy.get());  // keeps the connection cache and DNS cache
  return easy;
}

int ConsumerLoop::reserve_ready() {
  int started = 0;
  int64_t now = monotonic_ms();
  bool sweep = now >= next_sweep_ms_;
  if (sweep) next_sweep_ms_ = now + kSweepMs;
  for (size_t shard = 0; shard < config_.shards.size(); ++shard) {
    int free_slots = config_.consumer_concurrency - static_cast<int>(deliveries_.size());
    if (free_slots <= 0) {
      if (sweep) waiter_->keep(shard);
      continue;
    }
    bool woken = waiter_->take(shard);
    if (!woken && !sweep) continue;
    if (monotonic_ms() < retry_at_ms_[shard]) {
      waiter_->keep(shard);
      continue;
    }
    const auto& online = online_topics();
    SlotPlanInput input{
        &online, &in_flight_, free_slots, config_.consumer_concurrency, config_.lease_margin_ms,
        round_++};
    std::vector<ReserveSlot> slots = plan_slots(input);
    if (slots.empty()) continue;
    auto reserved = store_.reserve(shard, now_ms(), slots);
    if (!reserved.is_ok()) {
      if (!shard_down_[shard]) {
        err_log().error("consumer: cannot reserve on shard {}: {}", config_.shards[shard].name(),
                        reserved.status().message());
      }
      shard_down_[shard] = 1;
      retry_at_ms_[shard] = monotonic_ms() + kRedisRetryMs;
      waiter_->keep(shard);
      continue;
    }
    if (shard_down_[shard]) {
      err_log().info("consumer: shard {} reachable again", config_.shards[shard].name());
      shard_down_[shard] = 0;
    }
    // A batch that got jobs may have left more behind: ask again next turn.
    if (!reserved->empty()) waiter_->keep(shard);
    for (auto& job : *reserved) {
      const Topic* topic = topics_.find(job.job.topic);
      Topic fallback;
      if (!topic) {
        fallback.name = job.job.topic;
        topic = &fallback;
      }
      start_delivery(shard, std::move(job), *topic);
      ++started;
    }
  }
  return started;
}

void ConsumerLoop::start_delivery(size_t shard, ReservedJob reserved, const Topic& topic) {
  auto delivery = std::make_unique<Delivery>();
  delivery->shard = shard;
  delivery->job = std::move(reserved.job);
  delivery->topic = topic;
  delivery->request = build_callback_request(topic, delivery->job);
  delivery->easy = take_easy();
  delivery->started_ms = monotonic_ms();
  prepare_transfer(delivery.get());
  CURL* easy = delivery->easy.get();
  CURLMcode added = curl_multi_add_handle(multi_.get(), easy);
  ++in_flight_[delivery->job.topic];
  Delivery* raw = delivery.get();
  deliveries_.emplace(easy, std::move(delivery));
  if (added != CURLM_OK) {
    // Treat it as a failed attempt: the retry schedule applies as usual.
    std::snprintf(raw->error, sizeof(raw->error), "curl_multi_add_handle: %s",
                  curl_multi_strerror(added));
    TransferResult result = transfer_result(raw, CURLE_FAILED_INIT);
    finish(raw, result, record_failure(*raw, result));
  }
}

int ConsumerLoop::collect_finished() {
  int ended = 0;
  int queued = 0;
  std::vector<std::pair<Delivery*, TransferResult>> succeeded;
  while (CURLMsg* message = curl_multi_info_read(multi_.get(), &queued)) {
    if (message->msg != CURLMSG_DONE) continue;
    auto it = deliveries_.find(message->easy_handle);
    if (it == deliveries_.end()) continue;
    CURLcode code = message->data.result;  // read before removing the handle
    curl_multi_remove_handle(multi_.get(), message->easy_handle);
    Delivery* delivery = it->second.get();
    TransferResult result = transfer_result(delivery, code);
    if (result.ok) {
      succeeded.emplace_back(delivery, std::move(result));
    } else {
      finish(delivery, result, record_failure(*delivery, result));
    }
    ++ended;
  }
  ack_succeeded(succeeded);
  return ended;
}

// Acks every finished success of this turn, one pipelined round trip per
// shard instead of one per job.
void ConsumerLoop::ack_succeeded(
    const std::vector<std::pair<Delivery*, TransferResult>>& succeeded) {
  for (size_t shard = 0; shard < config_.shards.size(); ++shard) {
    std::vector<std::pair<std::string, std::string>> jobs;
    std::vector<const std::pair<Delivery*, TransferResult>*> entries;
    for (const auto& entry : succeeded) {
      if (entry.first->shard != shard) continue;
      jobs.emplace_back(entry.first->job.topic, entry.first->job.id);
      entries.push_back(&entry);
    }
    if (jobs.empty()) continue;
    std::vector<Status> acked = store_.ack_all(shard, jobs);
    for (size_t i = 0; i < entries.size(); ++i) {
      const Job& job = entries[i]->first->job;
      std::string outcome = "ok";
      if (acked[i].code() == Code::kNotFound) {
        outcome = "ok (already gone)";  // deleted meanwhile, or acked after a lease expiry
      } else if (!acked[i].is_ok()) {
        outcome = "ok-unacked";
        err_log().error(
            "consumer: ack of {}/{} failed ({}); it will be delivered again after its lease",
            job.topic, job.id, acked[i].message());
      }
      finish(entries[i]->first, entries[i]->second, outcome);
    }
  }
}

std::string ConsumerLoop::record_failure(const Delivery& delivery, const TransferResult& result) {
  const Job& job = delivery.job;
  int64_t delay = retry_delay_ms(delivery.topic, job.attempts, config_.backoff_unit_ms);
  int most = max_attempts(delivery.topic, config_.default_max_attempts);
  auto failed =
      store_.fail(delivery.shard, job.topic, job.id, job.attempts, delay, most, result.error);
  if (!failed.is_ok()) {
    err_log().error("consumer: fail of {}/{} not recorded ({}); it is retried after its lease",
                    job.topic, job.id, failed.status().message());
    return "fail-unrecorded";
  }
  if (*failed == FailOutcome::kRescheduled) return "retry in " + std::to_string(delay) + " ms";
  if (*failed == FailOutcome::kDead) {
    dead_lettered(delivery, result.error);
    return "dead";
  }
  return "stale";
}

void ConsumerLoop::finish(Delivery* delivery, const TransferResult& result,
                          const std::string& outcome) {
  const Job& job = delivery->job;
  int64_t latency = monotonic_ms() - delivery->started_ms;
  notify_log().info("topic={} id={} attempt={} status={} latency_ms={} result={} error={}",
                    job.topic, job.id, job.attempts, result.http_status, latency, outcome,
                    result.error.empty() ? "-" : result.error);

  if (--in_flight_[job.topic] <= 0) in_flight_.erase(job.topic);
  CURL* easy = delivery->easy.get();
  auto it = deliveries_.find(easy);
  if (it != deliveries_.end()) {
    CurlEasy handle = std::move(it->second->easy);
    deliveries_.erase(it);  // frees the request body and header list
    spare_easy_.push_back(std::move(handle));
  }
}

void ConsumerLoop::dead_lettered(const Delivery& delivery, const std::string& error) {
  const Job& job = delivery.job;
  err_log().warn("consumer: {}/{} is dead after {} attempts: {}", job.topic, job.id, job.attempts,
                 error);
  if (delivery.topic.alert_emails.empty()) return;
  if (!outbox_) {
    auto opened = AlertOutbox::open(config_.sqlite_path);
    if (!opened.is_ok()) {
      err_log().error("consumer: cannot open the alert outbox: {}", opened.status().message());
      return;
    }
    outbox_ = std::move(*opened);
  }
  auto queued =
      outbox_->queue(dead_letter_mail(delivery.topic, job.id, job.attempts, error, now_ms()));
  if (!queued.is_ok()) {
    err_log().error("consumer: cannot queue the alert mail for {}/{}: {}", job.topic, job.id,
                    queued.status().message());
    outbox_.reset();
  }
}

int ConsumerLoop::run() {
  while (true) {
    bool stopping = stop_requested();
    if (stopping && deliveries_.empty()) break;
    topics_.refresh_if_older(config_.registry_refresh_ms);
    reopen_logs_if_asked(config_.log_dir, config_.log_level, title_);
    int progressed = stopping ? 0 : reserve_ready();
    int running = 0;
    curl_multi_perform(multi_.get(), &running);
    progressed += collect_finished();
    if (progressed > 0) continue;  // freed slots or new work: look again before sleeping
    curl_multi_poll(multi_.get(), nullptr, 0, kIdlePollMs, nullptr);
  }
  return 0;
}

}  // namespace dq
