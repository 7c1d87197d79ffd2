// CircuitKeeper: the consumer's side of circuit breaking per endpoint and
// per receiver (common/store/circuit_state.h, common/registry/receiver.h,
// docs/delivery.md "Circuit breaking"). On the consumer's loop,
// asynchronously, it keeps each circuit in step with its shared copy in Redis
// (on the shard state_shard() names for its receiver), so
// the delivery loop (consumer_loop.h) never waits on Redis: it asks
// allowance() before it reserves a topic's jobs, and hands over each ended
// call that the circuit must hear of (a receiver failure, or an answer while
// it is not quiet).
//
// A reported call's outcome is passed on to its shard's calls only once the
// circuit has it: a failure after which the topic's calls stop (the one that
// opened the circuit, a call in flight meanwhile, a failed probe) is recorded
// without using an attempt, so an outage ends with jobs delivered, not dead.
// The one report that opens or closes the shared circuit queues its alert.
//
// While the receiver's shard cannot be reached, the keeper applies the same
// rules to a copy of its own (per process, no alerts) and goes back to the
// shared one when the shard answers. A job's last attempt is then never
// spent on a receiver failure: the processes count apart, so none may have
// stopped before the job's attempts ran out.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/alerts/alert_outbox.h"
#include "common/core/config.h"
#include "common/redis/async_shard.h"
#include "common/store/circuit_state.h"
#include "common/store/circuit_store.h"
#include "consumer/shard_calls.h"

namespace dq {

// What the circuit makes of an ended call.
enum class CallVerdict {
  kNone,            // says nothing of the receiver (refused by the URL rules)
  kAlive,           // an answer that is not a receiver failure (2xx, 4xx but 429)
  kReceiverFailed,  // no answer (refused, timeout, reset), 5xx or 429
};
CallVerdict call_verdict(const TransferResult& result, bool refused_by_rules);

// What one ended call of a topic with a breaker says to its endpoint's and
// its receiver's circuits: no answer is a failure of both; a 5xx or a 429
// (not in dead_on) one of the endpoint alone (the receiver answered); a 429
// or 503 with a Retry-After the topic honours (max_deferrals > 0) pauses the
// endpoint for that long and is not a failure.
struct CallNotes {
  CircuitNote endpoint;
  CircuitNote receiver;
};
CallNotes call_notes(const TransferResult& result, bool refused_by_rules, const Topic& topic,
                     const std::string& endpoint, const std::string& receiver);

class CircuitKeeper {
 public:
  using Forward = std::function<void(size_t shard, Outcome)>;
  // holder names this process in probe leases; shards are the store's
  // connections, one per shard; forward hands an outcome to its shard's
  // calls; changed tells the loop a circuit's view changed.
  CircuitKeeper(const Config& config, std::string holder, std::vector<AsyncShard*> shards,
                Forward forward, std::function<void()> changed);
  CircuitKeeper(const CircuitKeeper&) = delete;
  CircuitKeeper& operator=(const CircuitKeeper&) = delete;

  // The circuits (endpoints and receivers) of the online topics with a
  // breaker, each with the lease a probe of it needs (its topics' longest
  // timeout plus the lease margin).
  void watch(std::map<std::string, int64_t> lease_ms);
  // Calls a topic with this circuit_failures may have in flight at the
  // circuit from this process: -1 no limit, 0 none (open, or paused by a
  // Retry-After), else the probe allowance.
  int allowance(const std::string& name, int threshold) const;
  // Closed with no failure counted: an answer needs no report.
  bool quiet(const std::string& name) const;
  // Some watched circuit is not closed, or paused.
  bool any_open() const { return not_closed_ > 0; }
  // The circuit as last seen (nullptr: never seen).
  const Circuit* view(const std::string& name) const;
  // Why a topic with these circuits and this circuit_failures is held, or ""
  // when it is not: "receiver <name> failing since <UTC time> (...)" or
  // "receiver <name> paused by Retry-After since <UTC time> (...)". A job's
  // dead-letter reason when its max_retry_duration_s runs out meanwhile.
  std::string held_reason(const std::string& endpoint, const std::string& receiver,
                          int threshold) const;

  // The outcome goes to forward(shard, ...) once the circuits have it. Both
  // notes' circuits are of one receiver (one shard); a note with kNone is
  // left out.
  void report(CallNotes notes, size_t shard, Outcome outcome);
  // Reports whose answer has not come yet.
  size_t unreported() const { return reporting_; }
  // Called every loop tick: reads the circuits (every kRefreshMs).
  void tick(int64_t now_ms);
  // The consumer stops: no more refreshes; reports answered after the
  // deadline are forwarded as they are (the attempt counts).
  void stop(int64_t deadline_ms);

 private:
  struct View {
    Circuit circuit;
    bool paused = false;              // a Retry-After pause held it when last seen
    bool local = false;               // from this process's own copy
    int64_t lease_until_mono_ms = 0;  // this process holds the probe lease until then
  };

  // asked: the shard was asked (false: it is left alone after a failure).
  void reported(const std::vector<CircuitNote>& notes, size_t shard, Outcome outcome,
                Result<const redisReply*> reply, bool asked);
  // circuits and changes: one per note, in order.
  void decide(const std::vector<CircuitNote>& notes, size_t shard, Outcome outcome,
              const std::vector<Circuit>& circuits, const std::vector<CircuitChange>& changes,
              bool local);
  void refresh();
  void refresh_one(const std::string& receiver, int64_t lease_ms);
  void refreshed();
  // The receiver's shard connection, or nullptr while it is out (then the
  // local copy decides).
  AsyncShard* shard_for(const std::string& receiver);
  void shard_failed(const std::string& receiver, const Status& status);
  void set_view(const std::string& receiver, const Circuit& circuit, bool local);
  Circuit& local_copy(const std::string& receiver);
  void queue_alert(const AlertMail& mail);

  const Config& config_;
  std::string holder_;
  std::vector<AsyncShard*> shards_;
  Forward forward_;
  std::function<void()> changed_;

  std::map<std::string, int64_t> watched_;  // receiver -> probe lease ms
  std::map<std::string, View> views_;
  int not_closed_ = 0;
  size_t reporting_ = 0;
  size_t refreshing_ = 0;  // reads out
  bool stopping_ = false;
  int64_t stop_deadline_ms_ = 0;
  std::vector<int64_t> shard_retry_at_;  // monotonic: a shard that failed is left alone until then
  std::map<std::string, Circuit> local_;
  std::unique_ptr<AlertOutbox> outbox_;
  int64_t next_refresh_ms_ = 0;
};

}  // namespace dq
