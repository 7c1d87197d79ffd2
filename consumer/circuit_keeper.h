// CircuitKeeper: the consumer's side of circuit breaking per receiver
// (common/store/circuit_state.h, docs/delivery.md "Circuit breaking"). On
// the consumer's loop, asynchronously, it keeps each receiver's circuit in
// step with its shared copy in Redis (on the shard state_shard() names), so
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
#include "consumer/shard_calls.h"

namespace dq {

// What the circuit makes of an ended call.
enum class CallVerdict {
  kNone,            // says nothing of the receiver (refused by the URL rules)
  kAlive,           // an answer that is not a receiver failure (2xx, 4xx but 429)
  kReceiverFailed,  // no answer (refused, timeout, reset), 5xx or 429
};
CallVerdict call_verdict(const TransferResult& result, bool refused_by_rules);

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

  // The receivers of the online topics with a breaker, each with the lease a
  // probe of it needs (its topics' longest timeout plus the lease margin).
  void watch(std::map<std::string, int64_t> lease_ms);
  // Calls a topic with this circuit_failures may have in flight at the
  // receiver from this process: -1 no limit, 0 none, else the probe allowance.
  int allowance(const std::string& receiver, int threshold) const;
  // Closed with no failure counted: an answer needs no report.
  bool quiet(const std::string& receiver) const;
  // Some watched circuit is not closed.
  bool any_open() const { return not_closed_ > 0; }

  // The outcome goes to forward(shard, ...) once the circuit has it.
  void report(const std::string& receiver, bool receiver_failed, size_t shard, Outcome outcome);
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
    bool local = false;               // from this process's own copy
    int64_t lease_until_mono_ms = 0;  // this process holds the probe lease until then
  };

  // asked: the shard was asked (false: it is left alone after a failure).
  void reported(const std::string& receiver, bool failed, size_t shard, Outcome outcome,
                Result<const redisReply*> reply, bool asked);
  void decide(const std::string& receiver, bool failed, size_t shard, Outcome outcome,
              const Circuit& circuit, CircuitChange change, bool local);
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
