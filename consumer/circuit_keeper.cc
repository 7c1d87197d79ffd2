// The consumer's side of circuit breaking, on its loop (see circuit_keeper.h).
#include "consumer/circuit_keeper.h"

#include <ctime>
#include <utility>

#include "common/alerts/circuit_alerts.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/core/time_text.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/receiver.h"
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

CallNotes call_notes(const TransferResult& result, bool refused_by_rules, const Topic& topic,
                     const std::string& endpoint, const std::string& receiver) {
  CallNotes notes;
  notes.endpoint.name = endpoint;
  notes.receiver.name = receiver;
  if (refused_by_rules) {
    return notes;
  }
  long status = result.http_status;
  if (status == 0 && !result.ok) {
    // No answer: the host itself may be gone, every endpoint of it with it.
    notes.endpoint.verdict = CircuitVerdict::kFailed;
    notes.receiver.verdict = CircuitVerdict::kFailed;
    return notes;
  }
  notes.receiver.verdict = CircuitVerdict::kAlive;  // it answered
  if ((status == 429 || status == 503) && result.retry_after_ms >= 0 && topic.max_deferrals > 0 &&
      !is_dead_on(topic.dead_on, status)) {
    notes.endpoint.verdict = CircuitVerdict::kPause;
    notes.endpoint.pause_ms = result.retry_after_ms;
    return notes;
  }
  bool failed = call_verdict(result, false) == CallVerdict::kReceiverFailed &&
                !is_dead_on(topic.dead_on, status);
  notes.endpoint.verdict = failed ? CircuitVerdict::kFailed : CircuitVerdict::kAlive;
  return notes;
}

CircuitKeeper::CircuitKeeper(const Config& config, std::string holder,
                             std::vector<AsyncShard*> shards, Forward forward,
                             std::function<void()> changed)
    : config_(config),
      holder_(std::move(holder)),
      shards_(std::move(shards)),
      forward_(std::move(forward)),
      changed_(std::move(changed)),
      shard_retry_at_(shards_.size(), 0) {}

void CircuitKeeper::watch(std::map<std::string, int64_t> lease_ms) {
  watched_ = std::move(lease_ms);
}

int CircuitKeeper::allowance(const std::string& name, int threshold) const {
  auto it = views_.find(name);
  if (it == views_.end()) {
    return -1;
  }
  if (circuit_paused(it->second.circuit, now_ms())) {
    return 0;
  }
  if (!circuit_stops(it->second.circuit, threshold)) {
    return -1;
  }
  const View& view = it->second;
  if (view.circuit.phase == CircuitPhase::kHalfOpen && view.circuit.holder == holder_ &&
      view.lease_until_mono_ms > monotonic_ms()) {
    return view.circuit.allowed;
  }
  return 0;
}

const Circuit* CircuitKeeper::view(const std::string& name) const {
  auto it = views_.find(name);
  return it == views_.end() ? nullptr : &it->second.circuit;
}

std::string CircuitKeeper::held_reason(const std::string& endpoint, const std::string& receiver,
                                       int threshold) const {
  int64_t now = now_ms();
  for (const std::string* name : {&receiver, &endpoint}) {
    const Circuit* circuit = view(*name);
    if (circuit == nullptr) {
      continue;
    }
    if (circuit_stops(*circuit, threshold)) {
      int64_t since = circuit->opened_at_ms > 0 ? circuit->opened_at_ms : circuit->since_ms;
      return "receiver " + *name + " failing since " + utc_text(since) + " (circuit " +
             phase_name(circuit->phase) + ", last error: " + circuit->last_error + ")";
    }
    if (circuit_paused(*circuit, now)) {
      return "receiver " + *name + " paused by Retry-After since " +
             utc_text(circuit->paused_at_ms) + " (until " + utc_text(circuit->paused_until_ms) +
             ")";
    }
  }
  return "";
}

bool CircuitKeeper::quiet(const std::string& name) const {
  auto it = views_.find(name);
  return it == views_.end() ||
         (it->second.circuit.phase == CircuitPhase::kClosed && it->second.circuit.failures == 0);
}

void CircuitKeeper::tick(int64_t now_ms) {
  if (!stopping_ && refreshing_ == 0 && now_ms >= next_refresh_ms_) {
    next_refresh_ms_ = now_ms + kRefreshMs;
    refresh();
  }
}

void CircuitKeeper::stop(int64_t deadline_ms) {
  stopping_ = true;
  stop_deadline_ms_ = deadline_ms;
}

AsyncShard* CircuitKeeper::shard_for(const std::string& receiver) {
  if (shards_.empty()) {
    return nullptr;
  }
  size_t shard = state_shard(config_.shards, circuit_receiver(receiver));
  if (monotonic_ms() < shard_retry_at_[shard]) {
    return nullptr;
  }
  return shards_[shard];
}

void CircuitKeeper::shard_failed(const std::string& receiver, const Status& status) {
  size_t shard = state_shard(config_.shards, circuit_receiver(receiver));
  if (shard_retry_at_[shard] == 0) {
    err_log().warn(
        "consumer: circuit of {} not reachable on shard {} ({}); this process keeps its own "
        "until it is",
        receiver, config_.shards[shard].name(), status.message());
  }
  shard_retry_at_[shard] = monotonic_ms() + kShardRetryMs;
}

// This process's own copy of the receiver's circuit, seeded from the last view.
Circuit& CircuitKeeper::local_copy(const std::string& receiver) {
  auto it = local_.find(receiver);
  if (it == local_.end()) {
    auto seen = views_.find(receiver);
    it = local_.emplace(receiver, seen == views_.end() ? Circuit{} : seen->second.circuit).first;
  }
  return it->second;
}

void CircuitKeeper::report(CallNotes call, size_t shard, Outcome outcome) {
  std::vector<CircuitNote> notes;
  for (CircuitNote* note : {&call.endpoint, &call.receiver}) {
    if (note->verdict != CircuitVerdict::kNone && !note->name.empty()) {
      notes.push_back(std::move(*note));
    }
  }
  if (notes.empty()) {
    forward_(shard, std::move(outcome));
    return;
  }
  const Topic& topic = *outcome.topic;
  if (AsyncShard* connection = shard_for(notes.front().name)) {
    ++reporting_;
    int64_t lease_ms = topic.timeout_ms + config_.lease_margin_ms;
    ScriptCall script = circuit_report_call(notes, topic.circuit_failures, topic.circuit_open_ms,
                                            outcome.result.error, holder_, lease_ms);
    connection->run(std::move(script), [this, notes, shard, outcome = std::move(outcome)](
                                           Result<const redisReply*> reply) mutable {
      --reporting_;
      reported(notes, shard, std::move(outcome), std::move(reply), true);
    });
    return;
  }
  reported(notes, shard, std::move(outcome),
           Status(Code::kUnavailable, "the circuit's shard is left alone for a while"), false);
}

void CircuitKeeper::reported(const std::vector<CircuitNote>& notes, size_t shard, Outcome outcome,
                             Result<const redisReply*> reply, bool asked) {
  if (stopping_ && monotonic_ms() >= stop_deadline_ms_) {
    forward_(shard, std::move(outcome));  // as it is: the attempt counts
    return;
  }
  const Topic& topic = *outcome.topic;
  const std::string& home = notes.front().name;
  if (reply.is_ok() && (*reply)->type == REDIS_REPLY_ARRAY &&
      (*reply)->elements >= 2 * notes.size()) {
    std::vector<Circuit> circuits;
    std::vector<CircuitChange> changes;
    for (size_t i = 0; i < notes.size(); ++i) {
      const redisReply* first = (*reply)->element[2 * i];
      std::string told =
          first->type == REDIS_REPLY_STRING ? std::string(first->str, first->len) : std::string();
      changes.push_back(told == "opened"   ? CircuitChange::kOpened
                        : told == "closed" ? CircuitChange::kClosed
                                           : CircuitChange::kNone);
      circuits.push_back(circuit_from_reply((*reply)->element[2 * i + 1], 0));
      local_.erase(notes[i].name);
    }
    shard_retry_at_[state_shard(config_.shards, circuit_receiver(home))] = 0;
    decide(notes, shard, std::move(outcome), circuits, changes, false);
    return;
  }
  if (asked) {
    shard_failed(home,
                 reply.is_ok() ? Status(Code::kInternal, "unexpected reply") : reply.status());
  }
  // The shard is out: this process's own copies decide.
  int64_t lease_ms = topic.timeout_ms + config_.lease_margin_ms;
  std::vector<Circuit> circuits;
  for (const CircuitNote& note : notes) {
    Circuit& own = local_copy(note.name);
    if (note.verdict == CircuitVerdict::kPause) {
      circuit_pause(&own, note.pause_ms, outcome.result.error, now_ms());
    } else {
      CircuitChange local_change =
          circuit_report(&own, note.verdict == CircuitVerdict::kFailed, topic.circuit_failures,
                         topic.circuit_open_ms, outcome.result.error, holder_, lease_ms, now_ms());
      if (local_change != CircuitChange::kNone) {
        err_log().warn("consumer: circuit of {} {} (this process only: its shard is out)",
                       note.name, local_change == CircuitChange::kOpened ? "opened" : "closed");
      }
    }
    circuits.push_back(own);
  }
  decide(notes, shard, std::move(outcome), circuits,
         std::vector<CircuitChange>(notes.size(), CircuitChange::kNone), true);
}

void CircuitKeeper::decide(const std::vector<CircuitNote>& notes, size_t shard, Outcome outcome,
                           const std::vector<Circuit>& circuits,
                           const std::vector<CircuitChange>& changes, bool local) {
  const Topic& topic = *outcome.topic;
  bool failed = false;
  bool stops = false;
  for (size_t i = 0; i < notes.size(); ++i) {
    set_view(notes[i].name, circuits[i], local);
    failed = failed || notes[i].verdict == CircuitVerdict::kFailed;
    stops = stops || circuit_stops(circuits[i], topic.circuit_failures);
  }
  // A failure after which the topic's calls stop (at its endpoint or its
  // receiver) is recorded without using an attempt.
  if (failed && stops) {
    outcome.count_attempt = false;
    for (size_t i = 0; i < notes.size(); ++i) {
      if (circuit_stops(circuits[i], topic.circuit_failures)) {
        int64_t since =
            circuits[i].opened_at_ms > 0 ? circuits[i].opened_at_ms : circuits[i].since_ms;
        outcome.held_reason = "receiver " + notes[i].name + " failing since " + utc_text(since);
        break;
      }
    }
  }
  // Each process counts on its own while the shared state is out of reach,
  // so a job's attempts may land on several before any of them stops: its
  // last one is not spent on a receiver failure then.
  if (failed && local &&
      outcome.job.attempts >= max_attempts(topic, config_.default_max_attempts)) {
    outcome.count_attempt = false;
  }
  for (size_t i = 0; i < notes.size(); ++i) {
    const std::string& name = notes[i].name;
    const Circuit& circuit = circuits[i];
    if (changes[i] == CircuitChange::kOpened) {
      err_log().warn("consumer: circuit of {} opened after {} failures: {}", name, circuit.failures,
                     circuit.last_error);
      queue_alert(circuit_open_alert(topic, name, circuit.failures, circuit.open_ms,
                                     circuit.last_error, now_ms()));
    } else if (changes[i] == CircuitChange::kClosed) {
      int64_t open_for = circuit.opened_at_ms > 0 ? circuit.since_ms - circuit.opened_at_ms : 0;
      err_log().warn("consumer: circuit of {} closed after {} ms open", name, open_for);
      queue_alert(circuit_closed_alert(topic, name, open_for, now_ms()));
    }
  }
  forward_(shard, std::move(outcome));
}

void CircuitKeeper::refresh() {
  for (const auto& [receiver, lease_ms] : watched_) {
    if (shard_for(receiver) == nullptr) {
      // The shard is out: probe by this process's own copy, seeded from the
      // last view.
      if (local_.count(receiver) == 0 && views_.count(receiver) == 0) {
        continue;
      }
      Circuit& own = local_copy(receiver);
      circuit_take_probe(&own, holder_, lease_ms, now_ms());
      set_view(receiver, own, true);
      continue;
    }
    refresh_one(receiver, lease_ms);
  }
}

// HGETALL of the circuit, and while it is not closed the probe lease
// (everyone asks; the first whose wait is over, or whose lease expired,
// gets it, and its holder renews it here while it lives).
void CircuitKeeper::refresh_one(const std::string& receiver, int64_t lease_ms) {
  ++refreshing_;
  shard_for(receiver)->command(
      {"HGETALL", keys::circuit(receiver)},
      [this, receiver, lease_ms](Result<const redisReply*> read) {
        if (!read.is_ok()) {
          shard_failed(receiver, read.status());
          return refreshed();
        }
        Circuit circuit = circuit_from_reply(*read, 0);
        local_.erase(receiver);
        size_t home = state_shard(config_.shards, circuit_receiver(receiver));
        shard_retry_at_[home] = 0;
        if (circuit.phase == CircuitPhase::kClosed || stopping_) {
          set_view(receiver, circuit, false);
          return refreshed();
        }
        shards_[home]->run(
            circuit_probe_call(receiver, holder_, lease_ms),
            [this, receiver, lease_ms, circuit](Result<const redisReply*> probe) mutable {
              if (probe.is_ok() && (*probe)->type == REDIS_REPLY_ARRAY && (*probe)->elements >= 1) {
                circuit = circuit_from_reply(*probe, 1);
                if ((*probe)->element[0]->type == REDIS_REPLY_INTEGER &&
                    (*probe)->element[0]->integer == 1) {
                  views_[receiver].lease_until_mono_ms = monotonic_ms() + lease_ms - kLeaseSafetyMs;
                }
              }
              set_view(receiver, circuit, false);
              refreshed();
            });
      });
}

void CircuitKeeper::refreshed() { --refreshing_; }

void CircuitKeeper::set_view(const std::string& receiver, const Circuit& circuit, bool local) {
  View& view = views_[receiver];
  bool paused = circuit_paused(circuit, now_ms());
  bool changed = view.circuit.phase != circuit.phase || view.circuit.failures != circuit.failures ||
                 view.circuit.allowed != circuit.allowed || view.circuit.holder != circuit.holder ||
                 view.local != local || view.paused != paused;
  view.paused = paused;
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
    open += entry.second.circuit.phase != CircuitPhase::kClosed || entry.second.paused ? 1 : 0;
  }
  not_closed_ = open;
  if (changed) {
    changed_();
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
