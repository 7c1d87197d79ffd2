// ConsumerLoop: the main loop of one dq-consume_N process. It reserves ready
// jobs in batches (slot_planner.h decides how many per topic), runs their
// callbacks on one libcurl multi handle, and acks or fails each as it ends.
// When nothing is ready it sleeps in curl_multi_poll; WakeWaiter threads wake
// it when the timer makes jobs ready.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/alert_outbox.h"
#include "common/config.h"
#include "common/curl_handle.h"
#include "common/job_store.h"
#include "common/topic_cache.h"
#include "consumer/delivery.h"

namespace dq {

class WakeWaiter;

class ConsumerLoop {
 public:
  ConsumerLoop(const Config& config, std::string title);
  ~ConsumerLoop();

  // Runs until stop_requested() and every delivery in flight has ended.
  int run();

 private:
  int reserve_ready();  // returns how many deliveries were started
  void start_delivery(size_t shard, ReservedJob reserved, const Topic& topic);
  int collect_finished();  // returns how many ended
  void ack_succeeded(const std::vector<std::pair<Delivery*, TransferResult>>& succeeded);
  // Records a failed attempt (retry or dead letter); returns the outcome text.
  std::string record_failure(const Delivery& delivery, const TransferResult& result);
  // Logs the attempt and releases the delivery (its easy handle is kept for reuse).
  void finish(Delivery* delivery, const TransferResult& result, const std::string& outcome);
  void dead_lettered(const Delivery& delivery, const std::string& error);
  const std::vector<Topic>& online_topics();
  CurlEasy take_easy();

  const Config& config_;
  std::string title_;  // process title, for reopening logs on SIGHUP
  JobStore store_;
  TopicCache topics_;
  CurlMulti multi_;
  std::unique_ptr<WakeWaiter> waiter_;
  std::unique_ptr<AlertOutbox> outbox_;

  std::unordered_map<CURL*, std::unique_ptr<Delivery>> deliveries_;
  std::map<std::string, int> in_flight_;  // per topic
  std::vector<CurlEasy> spare_easy_;      // reset handles, reused
  std::vector<Topic> online_;
  int64_t online_at_ms_ = -1;
  std::vector<int64_t> retry_at_ms_;  // per shard, after a Redis error
  std::vector<char> shard_down_;
  int64_t next_sweep_ms_ = 0;  // periodic reserve, in case a wake was missed
  uint64_t round_ = 0;
};

}  // namespace dq
