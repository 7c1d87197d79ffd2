// The consumer's one loop (see consumer_loop.h).
#include "consumer/consumer_loop.h"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "common/core/clock.h"
#include "common/core/host_name.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "common/registry/drain_time.h"
#include "consumer/circuit_keeper.h"
#include "consumer/slot_planner.h"
#include "consumer/wake_waiter.h"

namespace dq {
namespace {

constexpr int64_t kTickMs = 100;        // stop, logs, registry and retries are seen within it
constexpr int64_t kSweepMs = 1000;      // reserve even without a wake this often
constexpr int64_t kHeldSweepMs = 1000;  // held jobs past max_retry_duration_s are looked for
constexpr int64_t kRedisRetryMs = 500;  // after a Redis error on a shard
constexpr int64_t kOnlineListMs = 200;  // rebuild the online topic list this often
// How long after its lease a lost ack or fail is still sent again: an ack
// that lands late still prevents a duplicate (ack.lua).
constexpr int64_t kRecordGraceMs = 60000;

// "host/pid/random/": reserve ids must never repeat, across hosts and restarts.
std::string reserve_prefix() {
  std::random_device random;
  uint64_t nonce = (static_cast<uint64_t>(random()) << 32) ^ random();
  char text[64];
  std::snprintf(text, sizeof(text), "/%d/%016llx/", static_cast<int>(getpid()),
                static_cast<unsigned long long>(nonce));
  return host_name() + text;
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

// The store's settings for a consumer: it adds no job, so it needs no
// connections that confirm adds on replicas.
Config store_settings(const Config& config) {
  Config settings = config;
  settings.redis_wait_replicas = 0;
  return settings;
}

}  // namespace

ConsumerLoop::ConsumerLoop(const Config& config, std::string title)
    : config_(config),
      title_(std::move(title)),
      store_config_(store_settings(config)),
      base_(event_base_new()),
      store_(base_.get(), store_config_),
      wakes_(base_.get(), store_config_),
      topics_(config.sqlite_path),
      curl_(base_.get(), [this](CURL* easy, CURLcode code) { finished(easy, code); }),
      clock_(base_.get(), curl_, [this](CURL* easy) { late(easy); }),
      shards_(config.shards.size()),
      checker_(config.pid_file) {
  long connections = std::max(1, config.consumer_concurrency);
  // At most `concurrency` transfers run, so a per-host cap equal to it never
  // queues one topic's transfer behind another topic's on the same host.
  curl_multi_setopt(curl_.multi(), CURLMOPT_MAX_HOST_CONNECTIONS, connections);
  curl_multi_setopt(curl_.multi(), CURLMOPT_MAXCONNECTS, connections);
  std::string prefix = reserve_prefix();
  for (size_t shard = 0; shard < config.shards.size(); ++shard) {
    calls_.push_back(std::make_unique<ShardCalls>(
        config, shard, base_.get(), store_, prefix,
        [this](size_t from, ReserveReply reply) { reserved(from, std::move(reply)); }));
  }
  circuits_ = std::make_unique<CircuitKeeper>(
      config, prefix, store_.connections(),
      [this](size_t shard, Outcome outcome) { calls_[shard]->record(std::move(outcome)); },
      [this] { circuits_changed(); });
  permits_ = std::make_unique<PermitKeeper>(config, base_.get(), store_.connections(), [this] {
    // A capped topic may take jobs now: shards holding its jobs still count
    // them as ready (ready_left), so a change is enough to ask them again.
    ++changes_;
    plan_soon();
  });
  tick_.reset(event_new(base_.get(), -1, EV_PERSIST, &ConsumerLoop::on_tick, this));
  plan_.reset(event_new(base_.get(), -1, 0, &ConsumerLoop::on_plan, this));
  Status refreshed = topics_.refresh();
  if (!refreshed.is_ok()) {
    err_log().warn("consumer: cannot read topics: {}", refreshed.message());
  }
}

// Every command still waiting is failed first, while everything its
// callback may touch still exists; then the transfers are taken out.
ConsumerLoop::~ConsumerLoop() {
  if (waiter_) {
    waiter_->stop();
  }
  wakes_.shutdown();
  store_.shutdown();
  for (auto& entry : deliveries_) {
    curl_.remove(entry.first);
  }
}

int ConsumerLoop::run() {
  store_.start();
  wakes_.start();
  // Wake waits start once each shard's first connect has ended, so a start
  // is not logged as a refused wait.
  while (!stop_requested() && !(store_.first_connects_ended() && wakes_.first_connects_ended())) {
    event_base_loop(base_.get(), EVLOOP_ONCE);
  }
  waiter_ = std::make_unique<WakeWaiter>(config_, base_.get(), wakes_, [this] { plan_soon(); });
  timeval every{0, static_cast<suseconds_t>(kTickMs * 1000)};
  event_add(tick_.get(), &every);
  plan_soon();
  event_base_dispatch(base_.get());
  for (const auto& calls : calls_) {
    calls->report_unfinished();
  }
  if (clock_.stalls() > 0) {
    err_log().info("consumer: the loop stood still {} time(s), the longest {} ms", clock_.stalls(),
                   clock_.longest_stall_ms());
  }
  return 0;
}

void ConsumerLoop::on_tick(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  static_cast<ConsumerLoop*>(self)->tick();
}

void ConsumerLoop::on_plan(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  auto* loop = static_cast<ConsumerLoop*>(self);
  loop->plan_queued_ = false;
  if (loop->drain_deadline_ms_ < 0) {
    loop->request_reserves();
  }
}

void ConsumerLoop::plan_soon() {
  if (!plan_queued_) {
    plan_queued_ = true;
    event_active(plan_.get(), EV_TIMEOUT, 1);
  }
}

void ConsumerLoop::tick() {
  int64_t now = monotonic_ms();
  if (stop_requested() && drain_deadline_ms_ < 0) {
    begin_stop();
  }
  topics_.refresh_if_older(config_.registry_refresh_ms);
  reopen_logs_if_asked(config_.log_dir, config_.log_level, title_);
  for (auto& calls : calls_) {
    calls->tick(now);
  }
  circuits_->tick(now);
  if (drain_deadline_ms_ >= 0) {
    check_drained(now);
    return;
  }
  if (now >= next_held_sweep_ms_ && held_sweeps_ == 0) {
    next_held_sweep_ms_ = now + kHeldSweepMs;
    expire_held();
  }
  if (now >= next_sweep_ms_) {
    // The safety net: every shard is asked again, wake or not.
    next_sweep_ms_ = now + kSweepMs;
    for (auto& state : shards_) {
      state.maybe_ready = true;
    }
    ++changes_;
  }
  plan_soon();
}

void ConsumerLoop::begin_stop() {
  // The calls in flight finish (each within its topic's timeout) and their
  // outcomes get recorded before the master's deadline for this process
  // (common/registry/drain_time.h), which is at least this long.
  int64_t longest = 0;
  for (const auto& entry : deliveries_) {
    longest = std::max<int64_t>(longest, entry.second->topic->timeout_ms);
  }
  drain_deadline_ms_ =
      monotonic_ms() + std::max<int64_t>(200, consumer_drain_ms(config_, longest) - 500);
  waiter_->stop();
  for (auto& calls : calls_) {
    calls->stop(drain_deadline_ms_);
  }
  circuits_->stop(drain_deadline_ms_);
}

// The stop ends once every call has ended and every outcome is recorded,
// every reserve answered (its jobs given back), and the permits on hand
// returned; or at the deadline.
void ConsumerLoop::check_drained(int64_t now) {
  bool quiet = deliveries_.empty() && circuits_->unreported() == 0 &&
               std::none_of(calls_.begin(), calls_.end(), [](const auto& calls) {
                 return calls->reserving() || calls->unfinished() > 0;
               });
  if (quiet && !permits_stopped_) {
    permits_stopped_ = true;
    permits_->stop();
  }
  if ((quiet && permits_->settled()) || now >= drain_deadline_ms_) {
    event_base_loopbreak(base_.get());
  }
}

const std::vector<Topic>& ConsumerLoop::online_topics() {
  int64_t now = monotonic_ms();
  if (online_at_ms_ < 0 || now - online_at_ms_ >= kOnlineListMs) {
    online_ = topics_.online();
    // A closed delivery window holds the topic like offline does: jobs
    // ready at the closing stay ready until the opening (the timer holds
    // those that fall due meanwhile).
    int64_t wall_now = now_ms();
    // A pull topic's jobs are reserved by workers over the API, never here.
    online_.erase(std::remove_if(online_.begin(), online_.end(),
                                 [&](const Topic& topic) {
                                   return topic.pull() || windows_.closed(topic, wall_now);
                                 }),
                  online_.end());
    online_at_ms_ = now;
    watch_receivers();
  }
  return online_;
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
  update_permit_wants(online_topics());
  for (size_t shard = 0; shard < shards_.size(); ++shard) {
    if (waiter_ && waiter_->take(shard)) {
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
        calls_[shard]->reserving() || checker_.is_unreachable(config_.shards[shard].name())) {
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
    // Its answer may come at once (a shard that is down): the state above is set first.
    calls_[shard]->reserve(slots, most, std::move(probe));
  }
}

void ConsumerLoop::reserved(size_t shard, ReserveReply reply) {
  ShardState& state = shards_[shard];
  state.promised = 0;
  state.probes_promised.clear();
  std::map<std::string, PermitBatch> permits = std::move(state.permits);
  state.permits.clear();
  plan_soon();  // its slots are free again
  for (const auto& [topic, jobs] : reply.waiting) {
    waiting_[topic][shard] = jobs;
  }
  if (!reply.ok) {
    give_back_unused(permits);
    state.retry_at_ms = monotonic_ms() + kRedisRetryMs;
    state.maybe_ready = true;
    return;
  }
  if (drain_deadline_ms_ >= 0) {
    // Stopping: its jobs go back at once, their attempts uncounted.
    if (!reply.jobs.empty()) {
      calls_[shard]->give_back(reply.reserve_id);
    }
    give_back_unused(permits);
    return;
  }
  for (const auto& death : reply.late_deaths) {
    if (const Topic* topic = topics_.find(death.topic)) {
      calls_[shard]->report_late_death(*topic, death);
    }
  }
  note_brought(shard, permits, reply);
  // Jobs left, or a full batch: ask again as soon as slots allow.
  state.maybe_ready = reply.ready_left > 0 || static_cast<int>(reply.jobs.size()) >= reply.asked;
  // Slots freed while it was in flight count as a change: compare with the
  // turn it was asked at, or those would wait for the next sweep.
  if (reply.jobs.empty()) {
    state.empty_at_turn = state.asked_at_turn;
  }
  for (auto& job : reply.jobs) {
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

void ConsumerLoop::start_delivery(ReservedJob reserved, const Topic& topic, bool permit) {
  std::unique_ptr<Delivery> delivery = take_delivery();
  delivery->shard = reserved.shard;
  delivery->job = std::move(reserved.job);
  delivery->lease = std::move(reserved.lease);
  delivery->topic = snapshot(topic);
  delivery->receiver.clear();
  delivery->endpoint.clear();
  if (topic.circuit_breaker) {
    const CircuitNames& names = circuits_of(topic);
    if (!names.receiver.empty()) {
      delivery->receiver = names.receiver;
      delivery->endpoint = names.endpoint;
      ++receiver_in_flight_[delivery->receiver];
      ++receiver_in_flight_[delivery->endpoint];
    }
  }
  delivery->permit = permit;
  build_callback_request(topic, delivery->job, &delivery->request);
  int64_t timeout_ms = std::max(1, delivery->topic->timeout_ms);
  delivery->started_ms = monotonic_ms();
  delivery->deadline_ms = delivery->started_ms + timeout_ms;
  prepare_transfer(delivery.get());
  CURL* easy = delivery->easy.get();
  CURLMcode added = curl_.add(easy);
  ++in_flight_[delivery->job.topic];
  Delivery* raw = delivery.get();
  deliveries_.emplace(easy, std::move(delivery));
  if (added == CURLM_OK) {
    // A stall of the loop may lengthen the call, never past half the lease
    // margin before the lease (timeout + margin) ends.
    clock_.start(easy, raw->deadline_ms,
                 raw->started_ms + timeout_ms + config_.lease_margin_ms / 2);
    return;
  }
  // Treat it as a failed attempt: the retry schedule applies as usual.
  std::snprintf(raw->error, sizeof(raw->error), "curl_multi_add_handle: %s",
                curl_multi_strerror(added));
  finished(easy, CURLE_FAILED_INIT);
}

void ConsumerLoop::late(CURL* easy) {
  auto it = deliveries_.find(easy);
  if (it == deliveries_.end()) {
    clock_.end(easy);
    return;
  }
  note_timeout(it->second.get(), monotonic_ms() - it->second->started_ms);
  finished(easy, CURLE_OPERATION_TIMEDOUT);
}

void ConsumerLoop::finished(CURL* easy, CURLcode code) {
  clock_.end(easy);
  curl_.remove(easy);  // after curl's result was read; aborts a call the clock ended
  auto it = deliveries_.find(easy);
  if (it == deliveries_.end()) {
    return;
  }
  Delivery* delivery = it->second.get();
  end_call(*delivery);
  Outcome outcome;
  outcome.result = transfer_result(delivery, code);
  outcome.latency_ms = monotonic_ms() - delivery->started_ms;
  outcome.give_up_at_ms =
      delivery->started_ms + delivery->topic->timeout_ms + config_.lease_margin_ms + kRecordGraceMs;
  outcome.job = std::move(delivery->job);
  outcome.lease = std::move(delivery->lease);
  outcome.topic = std::move(delivery->topic);
  size_t shard = delivery->shard;
  if (--in_flight_[outcome.job.topic] <= 0) {
    in_flight_.erase(outcome.job.topic);
  }
  std::string receiver = std::move(delivery->receiver);
  std::string endpoint = std::move(delivery->endpoint);
  CallNotes notes;
  if (!receiver.empty()) {
    notes = call_notes(outcome.result, !delivery->guard.refused().empty(), *outcome.topic, endpoint,
                       receiver);
  }
  keep_delivery(std::move(it->second));
  deliveries_.erase(it);
  ++changes_;
  plan_soon();
  if (!receiver.empty()) {
    for (const std::string* name : {&receiver, &endpoint}) {
      if (--receiver_in_flight_[*name] <= 0) {
        receiver_in_flight_.erase(*name);
      }
    }
    // The circuits hear of every failure and pause, and of an answer while
    // they are not quiet; they pass the outcome on to the shard's calls.
    for (CircuitNote* note : {&notes.endpoint, &notes.receiver}) {
      if (note->verdict == CircuitVerdict::kAlive && circuits_->quiet(note->name)) {
        note->verdict = CircuitVerdict::kNone;
      }
    }
    if (notes.endpoint.verdict != CircuitVerdict::kNone ||
        notes.receiver.verdict != CircuitVerdict::kNone) {
      circuits_->report(std::move(notes), shard, std::move(outcome));
      return;
    }
  }
  calls_[shard]->record(std::move(outcome));
}

}  // namespace dq
