// The consumer's deliver loop (see consumer_loop.h).
#include "consumer/consumer_loop.h"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "common/registry/drain_time.h"
#include "common/registry/receiver.h"
#include "consumer/circuit_keeper.h"
#include "consumer/shard_worker.h"
#include "consumer/slot_planner.h"
#include "consumer/wake_waiter.h"

namespace dq {
namespace {

constexpr int kIdlePollMs = 100;        // longest sleep; stop and refresh are seen within it
constexpr int64_t kSweepMs = 1000;      // reserve even without a wake this often
constexpr int64_t kRedisRetryMs = 500;  // after a Redis error on a shard
constexpr int64_t kOnlineListMs = 200;  // rebuild the online topic list this often
// How long after its lease a lost ack or fail is still sent again: an ack
// that lands late still prevents a duplicate (ack.lua).
constexpr int64_t kRecordGraceMs = 60000;

// "host/pid/random/": reserve ids must never repeat, across hosts and restarts.
std::string reserve_prefix() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::random_device random;
  uint64_t nonce = (static_cast<uint64_t>(random()) << 32) ^ random();
  char text[64];
  std::snprintf(text, sizeof(text), "/%d/%016llx/", static_cast<int>(getpid()),
                static_cast<unsigned long long>(nonce));
  return std::string(host) + text;
}

// Every field of Topic: a snapshot is reused only while the registry's topic
// is the same in all of them.
bool same_settings(const Topic& a, const Topic& b) {
  auto fields = [](const Topic& t) {
    return std::tie(t.name, t.callback_url, t.method, t.callback_format, t.success_json,
                    t.timeout_ms, t.default_delay_s, t.max_attempts, t.priority, t.retry_ms,
                    t.alert_emails, t.creator, t.online, t.created_at_ms, t.updated_at_ms,
                    t.max_deferrals, t.dead_on, t.retry_jitter, t.circuit_breaker,
                    t.circuit_failures, t.circuit_open_ms, t.max_in_flight, t.max_rate, t.max_burst,
                    t.signing_keys);
  };
  return fields(a) == fields(b);
}

}  // namespace

ConsumerLoop::ConsumerLoop(const Config& config, std::string title)
    : config_(config),
      title_(std::move(title)),
      topics_(config.sqlite_path),
      multi_(curl_multi_init()),
      shards_(config.shards.size()),
      checker_(config.pid_file) {
  long connections = std::max(1, config.consumer_concurrency);
  // At most `concurrency` transfers run, so a per-host cap equal to it never
  // queues one topic's transfer behind another topic's on the same host.
  curl_multi_setopt(multi_.get(), CURLMOPT_MAX_HOST_CONNECTIONS, connections);
  curl_multi_setopt(multi_.get(), CURLMOPT_MAXCONNECTS, connections);
  std::string prefix = reserve_prefix();
  for (size_t shard = 0; shard < config.shards.size(); ++shard) {
    workers_.push_back(std::make_unique<ShardWorker>(config, shard, multi_.get(), prefix));
  }
  circuits_ = std::make_unique<CircuitKeeper>(
      config, prefix, multi_.get(),
      [this](size_t shard, Outcome outcome) { workers_[shard]->record(std::move(outcome)); });
  waiter_ = std::make_unique<WakeWaiter>(config, multi_.get());
  permits_ = std::make_unique<PermitKeeper>(config, multi_.get());
  Status refreshed = topics_.refresh();
  if (!refreshed.is_ok()) {
    err_log().warn("consumer: cannot read topics: {}", refreshed.message());
  }
}

ConsumerLoop::~ConsumerLoop() {
  waiter_.reset();  // joins before the multi handle goes
  permits_.reset();
  for (auto& entry : deliveries_) {
    curl_multi_remove_handle(multi_.get(), entry.first);
  }
  circuits_.reset();  // joins; it forwards to the workers
  workers_.clear();   // joins
}

const std::vector<Topic>& ConsumerLoop::online_topics() {
  int64_t now = monotonic_ms();
  if (online_at_ms_ < 0 || now - online_at_ms_ >= kOnlineListMs) {
    online_ = topics_.online();
    online_at_ms_ = now;
    watch_receivers();
  }
  return online_;
}

const std::string& ConsumerLoop::receiver_of(const Topic& topic) {
  auto it = receivers_.find(topic.callback_url);
  if (it != receivers_.end()) {
    return it->second;
  }
  if (receivers_.size() >= 4096) {
    receivers_.clear();  // topics come and go
  }
  return receivers_.emplace(topic.callback_url, callback_receiver(topic.callback_url))
      .first->second;
}

void ConsumerLoop::watch_receivers() {
  std::map<std::string, int64_t> lease_ms;
  for (const Topic& topic : online_) {
    const std::string& receiver = receiver_of(topic);
    if (topic.circuit_breaker && !receiver.empty()) {
      int64_t lease = topic.timeout_ms + config_.lease_margin_ms;
      lease_ms[receiver] = std::max(lease_ms[receiver], lease);
    }
  }
  circuits_->watch(std::move(lease_ms));
}

const std::vector<Topic>& ConsumerLoop::reservable_topics(
    std::vector<Topic>* scratch, std::map<std::string, std::string>* probing,
    std::map<std::string, int>* room) {
  const std::vector<Topic>& online = online_topics();
  probing->clear();
  room->clear();
  if (!circuits_->any_open()) {
    return online;
  }
  scratch->clear();
  for (const Topic& topic : online) {
    const std::string& receiver = receiver_of(topic);
    int allowed = topic.circuit_breaker && !receiver.empty()
                      ? circuits_->allowance(receiver, topic.circuit_failures)
                      : -1;
    if (allowed >= 0) {
      // Probing: the receiver's calls in flight, and those reserves in flight
      // may bring, use the allowance up.
      auto busy = receiver_in_flight_.find(receiver);
      allowed -= busy == receiver_in_flight_.end() ? 0 : busy->second;
      for (const auto& state : shards_) {
        auto promised = state.probes_promised.find(receiver);
        allowed -= promised == state.probes_promised.end() ? 0 : promised->second;
      }
      if (allowed <= 0) {
        continue;
      }
      (*probing)[topic.name] = receiver;
      (*room)[receiver] = allowed;  // the same for each of its topics
    }
    scratch->push_back(topic);
  }
  return *scratch;
}

std::unique_ptr<Delivery> ConsumerLoop::take_delivery() {
  if (spare_.empty()) {
    return new_delivery();
  }
  // No curl_easy_reset: prepare_transfer sets every option that differs.
  std::unique_ptr<Delivery> delivery = std::move(spare_.back());
  spare_.pop_back();
  return delivery;
}

void ConsumerLoop::keep_delivery(std::unique_ptr<Delivery> delivery) {
  delivery->topic.reset();
  spare_.push_back(std::move(delivery));
}

std::shared_ptr<const Topic> ConsumerLoop::snapshot(const Topic& topic) {
  auto it = snapshots_.find(topic.name);
  if (it != snapshots_.end() && same_settings(*it->second, topic)) {
    return it->second;
  }
  auto copy = std::make_shared<const Topic>(topic);
  snapshots_[topic.name] = copy;
  return copy;
}

void ConsumerLoop::request_reserves() {
  int64_t now = monotonic_ms();
  if (now >= next_sweep_ms_) {
    next_sweep_ms_ = now + kSweepMs;
    for (auto& state : shards_) {
      state.maybe_ready = true;
    }
    ++changes_;
  }
  if (permits_->arrived()) {
    // A capped topic may take jobs now: shards holding its jobs still count
    // them as ready (ready_left), so a change is enough to ask them again.
    ++changes_;
  }
  update_permit_wants(online_topics());
  for (size_t shard = 0; shard < shards_.size(); ++shard) {
    if (waiter_->take(shard)) {
      shards_[shard].maybe_ready = true;
      ++changes_;
    }
  }
  int promised = 0;
  for (const auto& state : shards_) {
    promised += state.promised;
  }
  int free_slots = config_.consumer_concurrency - static_cast<int>(deliveries_.size()) - promised;
  if (free_slots <= 0) {
    return;
  }
  // Shards that want a reserve now share the free slots, so a stalled shard
  // holds at most its part while its reserve waits.
  std::vector<size_t> wanting;
  for (size_t i = 0; i < shards_.size(); ++i) {
    size_t shard = (round_ + i) % shards_.size();
    const ShardState& state = shards_[shard];
    if (!state.maybe_ready || state.empty_at_turn == changes_ || now < state.retry_at_ms ||
        workers_[shard]->reserving() || checker_.is_unreachable(config_.shards[shard].name())) {
      continue;
    }
    wanting.push_back(shard);
  }
  if (wanting.empty()) {
    return;
  }
  std::vector<Topic> scratch;
  std::map<std::string, std::string> probing;
  std::map<std::string, int> room;
  const auto& online = reservable_topics(&scratch, &probing, &room);
  if (online.empty()) {
    return;
  }
  int part = (free_slots + static_cast<int>(wanting.size()) - 1) / static_cast<int>(wanting.size());
  for (size_t shard : wanting) {
    int most = std::min(part, free_slots);
    if (most <= 0) {
      break;
    }
    SlotPlanInput input{&online,
                        &in_flight_,
                        most,
                        config_.consumer_concurrency,
                        config_.lease_margin_ms,
                        config_.default_max_attempts,
                        round_++};
    std::vector<ReserveSlot> slots = plan_slots(input);
    for (ReserveSlot& slot : slots) {
      auto probe = probing.find(slot.topic);
      if (probe != probing.end()) {
        // A probe: at most what the receiver's allowance leaves, counted as
        // taken until the reserve answers.
        int& left = room[probe->second];
        slot.cap = std::min(slot.cap, left);
        slot.share = std::min(slot.share, slot.cap);
        left -= slot.cap;
        shards_[shard].probes_promised[probe->second] += slot.cap;
      }
    }
    if (slots.empty()) {
      continue;
    }
    std::vector<std::string> probe = take_permits(online, slots, shards_[shard]);
    shards_[shard].promised = most;
    shards_[shard].asked_at_turn = changes_;
    free_slots -= most;
    workers_[shard]->reserve(std::move(slots), most, std::move(probe));
  }
}

void ConsumerLoop::take_reserved() {
  for (size_t shard = 0; shard < workers_.size(); ++shard) {
    auto reply = workers_[shard]->take_reply();
    if (!reply) {
      continue;
    }
    ShardState& state = shards_[shard];
    state.promised = 0;
    state.probes_promised.clear();
    std::map<std::string, PermitBatch> permits = std::move(state.permits);
    state.permits.clear();
    for (const auto& [topic, jobs] : reply->waiting) {
      waiting_[topic][shard] = jobs;
    }
    if (!reply->ok) {
      give_back_unused(permits);
      state.retry_at_ms = monotonic_ms() + kRedisRetryMs;
      state.maybe_ready = true;
      continue;
    }
    note_brought(shard, permits, *reply);
    // Jobs left, or a full batch: ask again as soon as slots allow.
    state.maybe_ready =
        reply->ready_left > 0 || static_cast<int>(reply->jobs.size()) >= reply->asked;
    // Slots freed while it was in flight count as a change: compare with the
    // turn it was asked at, or those would wait for the next sweep.
    if (reply->jobs.empty()) {
      state.empty_at_turn = state.asked_at_turn;
    }
    for (auto& job : reply->jobs) {
      const Topic* topic = topics_.find(job.job.topic);
      Topic fallback;
      if (!topic) {
        fallback.name = job.job.topic;
        topic = &fallback;
      }
      bool permit = false;
      auto bag = permits.find(job.job.topic);
      if (bag != permits.end() && bag->second.count > 0) {
        permit = true;
        --bag->second.count;
      }
      start_delivery(std::move(job), *topic, permit);
    }
    give_back_unused(permits);
  }
}

void ConsumerLoop::start_delivery(ReservedJob reserved, const Topic& topic, bool permit) {
  std::unique_ptr<Delivery> delivery = take_delivery();
  delivery->shard = reserved.shard;
  delivery->job = std::move(reserved.job);
  delivery->lease = std::move(reserved.lease);
  delivery->topic = snapshot(topic);
  delivery->receiver = topic.circuit_breaker ? receiver_of(topic) : std::string();
  if (!delivery->receiver.empty()) {
    ++receiver_in_flight_[delivery->receiver];
  }
  delivery->permit = permit;
  build_callback_request(topic, delivery->job, &delivery->request);
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
    Outcome outcome;
    outcome.job = raw->job;
    outcome.lease = raw->lease;
    outcome.topic = raw->topic;
    outcome.result = std::move(result);
    outcome.give_up_at_ms =
        monotonic_ms() + raw->topic->timeout_ms + config_.lease_margin_ms + kRecordGraceMs;
    workers_[raw->shard]->record(std::move(outcome));
    end_call(*raw);
    if (--in_flight_[raw->job.topic] <= 0) {
      in_flight_.erase(raw->job.topic);
    }
    if (!raw->receiver.empty() && --receiver_in_flight_[raw->receiver] <= 0) {
      receiver_in_flight_.erase(raw->receiver);
    }
    auto it = deliveries_.find(easy);
    keep_delivery(std::move(it->second));
    deliveries_.erase(it);
  }
}

int ConsumerLoop::collect_finished() {
  int ended = 0;
  int queued = 0;
  while (CURLMsg* message = curl_multi_info_read(multi_.get(), &queued)) {
    if (message->msg != CURLMSG_DONE) {
      continue;
    }
    auto it = deliveries_.find(message->easy_handle);
    if (it == deliveries_.end()) {
      continue;
    }
    CURLcode code = message->data.result;  // read before removing the handle
    curl_multi_remove_handle(multi_.get(), message->easy_handle);
    Delivery* delivery = it->second.get();
    end_call(*delivery);
    Outcome outcome;
    outcome.result = transfer_result(delivery, code);
    outcome.latency_ms = monotonic_ms() - delivery->started_ms;
    outcome.give_up_at_ms = delivery->started_ms + delivery->topic->timeout_ms +
                            config_.lease_margin_ms + kRecordGraceMs;
    outcome.job = std::move(delivery->job);
    outcome.lease = std::move(delivery->lease);
    outcome.topic = std::move(delivery->topic);
    size_t shard = delivery->shard;
    if (--in_flight_[outcome.job.topic] <= 0) {
      in_flight_.erase(outcome.job.topic);
    }
    std::string receiver = std::move(delivery->receiver);
    CallVerdict verdict = call_verdict(outcome.result, !delivery->guard.refused().empty());
    keep_delivery(std::move(it->second));
    deliveries_.erase(it);
    ++ended;
    if (!receiver.empty()) {
      if (--receiver_in_flight_[receiver] <= 0) {
        receiver_in_flight_.erase(receiver);
      }
      // The circuit hears of every receiver failure, and of an answer while
      // it is not quiet; it passes the outcome on to the shard's worker.
      bool failed = verdict == CallVerdict::kReceiverFailed;
      if (failed || (verdict == CallVerdict::kAlive && !circuits_->quiet(receiver))) {
        circuits_->report(receiver, failed, shard, std::move(outcome));
        continue;
      }
    }
    workers_[shard]->record(std::move(outcome));
  }
  if (ended > 0) {
    ++changes_;
  }
  return ended;
}

int ConsumerLoop::run() {
  int64_t drain_deadline = -1;
  while (true) {
    bool stopping = stop_requested();
    if (stopping && drain_deadline < 0) {
      // The calls in flight finish (each within its topic's timeout) and
      // their outcomes get recorded before the master's deadline for this
      // process (common/registry/drain_time.h), which is at least this long.
      int64_t longest = 0;
      for (const auto& entry : deliveries_) {
        longest = std::max<int64_t>(longest, entry.second->topic->timeout_ms);
      }
      drain_deadline =
          monotonic_ms() + std::max<int64_t>(200, consumer_drain_ms(config_, longest) - 500);
    }
    if (stopping && deliveries_.empty() &&
        std::none_of(workers_.begin(), workers_.end(),
                     [](const auto& worker) { return worker->reserving(); })) {
      break;
    }
    topics_.refresh_if_older(config_.registry_refresh_ms);
    reopen_logs_if_asked(config_.log_dir, config_.log_level, title_);
    if (circuits_->version() != circuits_seen_) {
      // A circuit changed: topics it stopped may take jobs again (or not).
      circuits_seen_ = circuits_->version();
      for (auto& state : shards_) {
        state.maybe_ready = true;
      }
      ++changes_;
    }
    take_reserved();
    if (!stopping) {
      request_reserves();
    }
    int running = 0;
    curl_multi_perform(multi_.get(), &running);
    int progressed = collect_finished();
    if (progressed > 0) {
      continue;  // freed slots: look again before sleeping
    }
    curl_multi_poll(multi_.get(), nullptr, 0, kIdlePollMs, nullptr);
  }
  // Reserves still in flight: their jobs are leased to this process but not
  // started; they go back when their lease expires (the attempt counts).
  circuits_->stop(drain_deadline);
  circuits_.reset();  // joins once every reported outcome is passed on
  for (auto& worker : workers_) {
    worker->stop(drain_deadline);
  }
  workers_.clear();  // joins once every outcome is recorded or the deadline passed
  return 0;
}

}  // namespace dq
