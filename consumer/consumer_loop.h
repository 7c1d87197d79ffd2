// ConsumerLoop: one dq-consume_N process, on one libevent loop and one
// thread. The loop drives libcurl's multi interface through its socket and
// timer callbacks (consumer/curl_loop.h) beside the asynchronous job store
// (common/store/async_job_store.h): reserves, acks and fails per shard
// (shard_calls.h), wake-ups (wake_waiter.h), permits of capped topics
// (permit_keeper.h) and receivers' circuits (circuit_keeper.h) are calls on
// the same loop, answered by callbacks; nothing waits on Redis and nothing
// is handed between threads. Calls are judged late by the consumer's own
// clock (transfer_clock.h), so a pause of the process is not a timeout.
//
// The loop decides when and how much to reserve per shard (slot_planner.h),
// so a slow shard holds only the slots it was promised. When to reserve on a
// shard: it may have ready jobs (a wake token from the timer, or the last
// reserve said jobs were left), and something changed since the last reserve
// that took nothing (a slot freed, a wake came). So a wake is never lost,
// whatever the number of topics and however slots are shared.
#pragma once

#include <curl/curl.h>
#include <event2/event.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/redis/shard_health.h"
#include "common/registry/topic_cache.h"
#include "common/registry/topic_window.h"
#include "common/store/async_job_store.h"
#include "consumer/curl_loop.h"
#include "consumer/delivery.h"
#include "consumer/permit_keeper.h"
#include "consumer/shard_calls.h"
#include "consumer/transfer_clock.h"

namespace dq {

class WakeWaiter;
class CircuitKeeper;

class ConsumerLoop {
 public:
  ConsumerLoop(const Config& config, std::string title);
  ~ConsumerLoop();

  // Runs until stop_requested() and every delivery in flight has ended and
  // been recorded (or the drain deadline passed).
  int run();

 private:
  // Per shard, the loop's view.
  struct ShardState {
    bool maybe_ready = true;     // it may hold ready jobs
    uint64_t empty_at_turn = 0;  // changes_ when a reserve that took nothing was asked for
    uint64_t asked_at_turn = 0;  // changes_ when the reserve in flight was asked for
    int promised = 0;            // slots asked for by the reserve in flight
    int64_t retry_at_ms = 0;     // after a Redis error
    // Probe allowance the reserve in flight may take, per circuit.
    std::map<std::string, int> probes_promised;
    // Permits of capped topics taken for the reserve in flight.
    std::map<std::string, PermitBatch> permits;
  };

  static void on_tick(evutil_socket_t fd, short events, void* self);
  static void on_plan(evutil_socket_t fd, short events, void* self);
  void tick();
  // Plans reserves once, at the end of this loop turn.
  void plan_soon();
  void begin_stop();
  void check_drained(int64_t now);
  void request_reserves();
  // Capped topics (consumer/permit_keeper.h): how many permits to keep on
  // hand, and the slots of a reserve clamped to the permits taken for it.
  void update_permit_wants(const std::vector<Topic>& online);
  std::vector<std::string> take_permits(const std::vector<Topic>& online,
                                        std::vector<ReserveSlot>& slots, ShardState& state);
  void note_brought(size_t shard, const std::map<std::string, PermitBatch>& lent,
                    const ReserveReply& reply);
  void end_call(Delivery& delivery);
  // Permits taken for a reserve that brought fewer jobs go back to the keeper's hand.
  void give_back_unused(std::map<std::string, PermitBatch>& permits);
  void reserved(size_t shard, ReserveReply reply);  // starts the deliveries a reserve brought
  void start_delivery(ReservedJob reserved, const Topic& topic, bool permit);
  std::shared_ptr<const Topic> snapshot(const Topic& topic);
  void finished(CURL* easy, CURLcode code);  // a transfer ended (curl, or the clock)
  void late(CURL* easy);                     // the clock ends a call
  void circuits_changed();
  const std::vector<Topic>& online_topics();
  // The online topics a reserve on a shard may list: all of them while every
  // circuit is closed; else without those whose endpoint's or receiver's
  // circuit stops them (open, or paused by a Retry-After).
  // Those it lets probe are in *probing (topic -> circuit), and *room has
  // the most jobs each such circuit may still get (its probe allowance).
  const std::vector<Topic>& reservable_topics(std::vector<Topic>* scratch,
                                              std::map<std::string, std::string>* probing,
                                              std::map<std::string, int>* room);
  void watch_receivers();
  // Dead-letters the ready jobs of held topics whose max_retry_duration_s ran
  // out (common/store/lua/expire_held.lua): a held job is never reserved.
  void expire_held();
  struct CircuitNames {
    std::string receiver;  // host:port ("" when the URL does not parse)
    std::string endpoint;  // host:port/path
  };
  const CircuitNames& circuits_of(const Topic& topic);
  std::unique_ptr<Delivery> take_delivery();
  void keep_delivery(std::unique_ptr<Delivery> delivery);

  const Config& config_;
  std::string title_;  // process title, for reopening logs on SIGHUP
  // The store's settings: the consumer adds nothing, so no replica
  // confirmation connections.
  Config store_config_;
  UniqueEventBase base_;  // first: every event and connection below is on it
  AsyncJobStore store_;   // reserves, acks, fails; permits, circuits and plain reads
  AsyncJobStore wakes_;   // wake waits only (a BLPOP holds its connection)
  TopicCache topics_;
  CurlLoop curl_;
  TransferClock clock_;
  std::vector<std::unique_ptr<ShardCalls>> calls_;
  std::unique_ptr<CircuitKeeper> circuits_;  // forwards outcomes to calls_
  std::unique_ptr<PermitKeeper> permits_;
  std::unique_ptr<WakeWaiter> waiter_;
  UniqueEvent tick_;
  UniqueEvent plan_;
  bool plan_queued_ = false;
  // Capped topics: jobs ready per shard, as the last reserve there saw them
  // (kMoreReady: it used every permit, so more may wait).
  static constexpr int64_t kMoreReady = int64_t{1} << 30;
  std::map<std::string, std::map<size_t, int64_t>> waiting_;
  std::set<std::string> capped_;                   // capped topics the keeper was told about
  int64_t next_held_sweep_ms_ = 0;                 // monotonic
  size_t held_sweeps_ = 0;                         // expire_held calls out
  std::map<std::string, int> receiver_in_flight_;  // calls per circuit (receiver, endpoint)
  std::map<std::string, CircuitNames> receivers_;  // callback URL -> its circuits
  std::vector<ShardState> shards_;
  // A shard dq-redis-checker marks unreachable is not reserved on; one that
  // only refuses writes (full...) is, so its jobs can drain.
  ShardHealthView checker_;

  std::unordered_map<CURL*, std::unique_ptr<Delivery>> deliveries_;
  std::map<std::string, int> in_flight_;  // per topic
  // Finished deliveries, reused: their easy handles keep their options and
  // the connection and DNS caches, their strings their buffers.
  std::vector<std::unique_ptr<Delivery>> spare_;
  // One shared copy of each topic's settings for the deliveries and outcomes
  // that carry it, replaced when the registry's version differs.
  std::map<std::string, std::shared_ptr<const Topic>> snapshots_;
  std::vector<Topic> online_;
  int64_t online_at_ms_ = -1;
  TopicWindows windows_;       // a topic whose delivery window is closed is not reserved
  int64_t next_sweep_ms_ = 0;  // reserve even without a wake this often
  uint64_t changes_ = 1;       // bumped when a slot frees or a wake comes
  uint64_t round_ = 0;
  int64_t drain_deadline_ms_ = -1;  // set when the stop began
  bool permits_stopped_ = false;
};

}  // namespace dq
