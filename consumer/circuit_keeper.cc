// The consumer's circuit breaker thread (see circuit_keeper.h).
#include "consumer/circuit_keeper.h"

#include <chrono>
#include <utility>

#include "common/alerts/circuit_alerts.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/registry/retry_policy.h"
#include "common/store/circuit_store.h"
#include "common/store/state_shard.h"

namespace dq {
namespace {

constexpr int64_t kRefreshMs = 250;       // circuits are read (and leases renewed) this often
constexpr int64_t kShardRetryMs = 1000;   // a shard that failed is asked again after this
constexpr int64_t kLeaseSafetyMs = 1000;  // the local lease ends before Redis's does

}  // namespace

CallVerdict call_verdict(const TransferResult& result, bool refused_by_rules) {
  if (refused_by_rules) {
    return CallVerdict::kNone;
  }
  long status = result.http_status;
  if (status == 0 || status >= 500 || status == 429) {
    return result.ok ? CallVerdict::kAlive : CallVerdict::kReceiverFailed;
  }
  return CallVerdict::kAlive;
}

CircuitKeeper::CircuitKeeper(const Config& config, std::string holder, CURLM* multi,
                             Forward forward)
    : config_(config), holder_(std::move(holder)), multi_(multi), forward_(std::move(forward)) {
  for (const auto& address : config.shards) {
    shards_.emplace_back(address, config.redis_connect_timeout_ms, config.redis_command_timeout_ms);
  }
  shard_retry_at_.assign(shards_.size(), 0);
  start([this] { run(); });
}

CircuitKeeper::~CircuitKeeper() { stop_and_join(); }


void CircuitKeeper::watch(std::map<std::string, int64_t> lease_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  watched_ = std::move(lease_ms);
}

int CircuitKeeper::allowance(const std::string& receiver, int threshold) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = views_.find(receiver);
  if (it == views_.end() || !circuit_stops(it->second.circuit, threshold)) {
    return -1;
  }
  const View& view = it->second;
  if (view.circuit.phase == CircuitPhase::kHalfOpen && view.circuit.holder == holder_ &&
      view.lease_until_mono_ms > monotonic_ms()) {
    return view.circuit.allowed;
  }
  return 0;
}

bool CircuitKeeper::quiet(const std::string& receiver) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = views_.find(receiver);
  return it == views_.end() ||
         (it->second.circuit.phase == CircuitPhase::kClosed && it->second.circuit.failures == 0);
}

void CircuitKeeper::report(const std::string& receiver, bool receiver_failed, size_t shard,
                           Outcome outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  reports_.push_back({receiver, receiver_failed, shard, std::move(outcome)});
  changed_.notify_all();
}

size_t CircuitKeeper::unreported() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reports_.size();
}

void CircuitKeeper::run() {
  while (true) {
    std::deque<Report> batch;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait_for(lock, std::chrono::milliseconds(kTickMs),
                        [&] { return !reports_.empty() || stopping_; });
      stopping = stopping_;
      batch.swap(reports_);
      if (stopping && batch.empty()) {
        return;
      }
    }
    for (auto& report : batch) {
      if (stopping && monotonic_ms() >= stop_deadline_ms_) {
        forward_(report.shard, std::move(report.outcome));  // as it is: the attempt counts
        continue;
      }
      record(std::move(report));
    }
    int64_t now = monotonic_ms();
    if (!stopping && now >= next_refresh_ms_) {
      refresh();
      next_refresh_ms_ = monotonic_ms() + kRefreshMs;
    }
  }
}

RedisConnection* CircuitKeeper::shard_for(const std::string& receiver) {
  if (shards_.empty()) {
    return nullptr;
  }
  size_t shard = state_shard(config_.shards, receiver);
  if (monotonic_ms() < shard_retry_at_[shard]) {
    return nullptr;
  }
  return &shards_[shard];
}

void CircuitKeeper::shard_failed(const std::string& receiver, const Status& status) {
  size_t shard = state_shard(config_.shards, receiver);
  if (shard_retry_at_[shard] == 0) {
    err_log().warn(
        "consumer: circuit of {} not reachable on shard {} ({}); this process keeps its own "
        "until it is",
        receiver, config_.shards[shard].name(), status.message());
  }
  shard_retry_at_[shard] = monotonic_ms() + kShardRetryMs;
}

void CircuitKeeper::record(Report report) {
  Outcome& outcome = report.outcome;
  const Topic& topic = *outcome.topic;
  int64_t lease_ms = topic.timeout_ms + config_.lease_margin_ms;
  Circuit circuit;
  CircuitChange change = CircuitChange::kNone;
  bool local = true;
  if (RedisConnection* shard = shard_for(report.receiver)) {
    auto reply = shard->run(circuit_report_call(report.receiver, report.failed,
                                                topic.circuit_failures, topic.circuit_open_ms,
                                                outcome.result.error, holder_, lease_ms));
    if (reply.is_ok() && (*reply)->type == REDIS_REPLY_ARRAY && (*reply)->elements >= 1) {
      const redisReply* first = (*reply)->element[0];
      std::string told =
          first->type == REDIS_REPLY_STRING ? std::string(first->str, first->len) : std::string();
      change = told == "opened"   ? CircuitChange::kOpened
               : told == "closed" ? CircuitChange::kClosed
                                  : CircuitChange::kNone;
      circuit = circuit_from_reply(reply->get(), 1);
      local = false;
      local_.erase(report.receiver);
      shard_retry_at_[state_shard(config_.shards, report.receiver)] = 0;
    } else {
      shard_failed(report.receiver,
                   reply.is_ok() ? Status(Code::kInternal, "unexpected reply") : reply.status());
    }
  }
  if (local) {
    // The shard is out: this process's own copy, seeded from the last view.
    auto it = local_.find(report.receiver);
    if (it == local_.end()) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto seen = views_.find(report.receiver);
      it = local_.emplace(report.receiver, seen == views_.end() ? Circuit{} : seen->second.circuit)
               .first;
    }
    CircuitChange local_change =
        circuit_report(&it->second, report.failed, topic.circuit_failures, topic.circuit_open_ms,
                       outcome.result.error, holder_, lease_ms, now_ms());
    if (local_change != CircuitChange::kNone) {
      err_log().warn("consumer: circuit of {} {} (this process only: its shard is out)",
                     report.receiver, local_change == CircuitChange::kOpened ? "opened" : "closed");
    }
    circuit = it->second;
  }
  set_view(report.receiver, circuit, local);
  if (report.failed && circuit_stops(circuit, topic.circuit_failures)) {
    outcome.count_attempt = false;
  }
  // Each process counts on its own while the shared state is out of reach,
  // so a job's attempts may land on several before any of them stops: its
  // last one is not spent on a receiver failure then.
  if (report.failed && local &&
      outcome.job.attempts >= max_attempts(topic, config_.default_max_attempts)) {
    outcome.count_attempt = false;
  }
  if (change == CircuitChange::kOpened) {
    err_log().warn("consumer: circuit of {} opened after {} failures: {}", report.receiver,
                   circuit.failures, circuit.last_error);
    queue_alert(circuit_open_alert(topic, report.receiver, circuit.failures, circuit.open_ms,
                                   circuit.last_error, now_ms()));
  } else if (change == CircuitChange::kClosed) {
    int64_t open_for = circuit.opened_at_ms > 0 ? circuit.since_ms - circuit.opened_at_ms : 0;
    err_log().warn("consumer: circuit of {} closed after {} ms open", report.receiver, open_for);
    queue_alert(circuit_closed_alert(topic, report.receiver, open_for, now_ms()));
  }
  forward_(report.shard, std::move(outcome));
}

void CircuitKeeper::refresh() {
  std::map<std::string, int64_t> watched;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    watched = watched_;
  }
  for (const auto& [receiver, lease_ms] : watched) {
    RedisConnection* shard = shard_for(receiver);
    if (shard == nullptr) {
      // The shard is out: probe by this process's own copy, seeded from the
      // last view.
      auto own = local_.find(receiver);
      if (own == local_.end()) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto seen = views_.find(receiver);
        if (seen == views_.end()) {
          continue;
        }
        own = local_.emplace(receiver, seen->second.circuit).first;
      }
      circuit_take_probe(&own->second, holder_, lease_ms, now_ms());
      set_view(receiver, own->second, true);
      continue;
    }
    auto read = shard->command({"HGETALL", keys::circuit(receiver)});
    if (!read.is_ok()) {
      shard_failed(receiver, read.status());
      continue;
    }
    Circuit circuit = circuit_from_reply(read->get(), 0);
    local_.erase(receiver);
    shard_retry_at_[state_shard(config_.shards, receiver)] = 0;
    if (circuit.phase != CircuitPhase::kClosed) {
      // Everyone asks; the first whose wait is over (or whose lease is
      // expired) gets it, and its holder renews it here while it lives.
      auto probe = shard->run(circuit_probe_call(receiver, holder_, lease_ms));
      if (probe.is_ok() && (*probe)->type == REDIS_REPLY_ARRAY && (*probe)->elements >= 1) {
        circuit = circuit_from_reply(probe->get(), 1);
        if ((*probe)->element[0]->type == REDIS_REPLY_INTEGER &&
            (*probe)->element[0]->integer == 1) {
          std::lock_guard<std::mutex> lock(mutex_);
          views_[receiver].lease_until_mono_ms = monotonic_ms() + lease_ms - kLeaseSafetyMs;
        }
      }
    }
    set_view(receiver, circuit, false);
  }
}

void CircuitKeeper::set_view(const std::string& receiver, const Circuit& circuit, bool local) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    View& view = views_[receiver];
    changed = view.circuit.phase != circuit.phase || view.circuit.failures != circuit.failures ||
              view.circuit.allowed != circuit.allowed || view.circuit.holder != circuit.holder ||
              view.local != local;
    if (local && circuit.holder == holder_ && circuit.lease_until_ms > 0) {
      view.lease_until_mono_ms = monotonic_ms() + (circuit.lease_until_ms - now_ms());
    }
    if (circuit.holder != holder_) {
      view.lease_until_mono_ms = 0;
    }
    view.circuit = circuit;
    view.local = local;
    int open = 0;
    for (const auto& entry : views_) {
      open += entry.second.circuit.phase != CircuitPhase::kClosed ? 1 : 0;
    }
    not_closed_.store(open);
  }
  if (changed) {
    version_.fetch_add(1);
    curl_multi_wakeup(multi_);
  }
}

void CircuitKeeper::queue_alert(const AlertMail& mail) {
  if (!outbox_) {
    auto opened = AlertOutbox::open(config_.sqlite_path);
    if (!opened.is_ok()) {
      err_log().error("cannot open the alert outbox: {}", opened.status().message());
      return;
    }
    outbox_ = std::move(*opened);
  }
  auto queued = outbox_->queue(mail);
  if (!queued.is_ok()) {
    err_log().error("cannot queue the {} alert of {}: {}", mail.kind, mail.job_id,
                    queued.status().message());
    outbox_.reset();
  }
}

}  // namespace dq
