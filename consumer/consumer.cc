// dq-consume_N entry point: installs the stop handlers and the callback URL
// rules, and runs the loop.
#include "consumer/consumer.h"

#include <curl/curl.h>

#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "consumer/consumer_loop.h"
#include "consumer/delivery.h"

namespace dq {

int run_consumer(const Config& config, int index) {
  install_stop_handlers();
  curl_global_init(CURL_GLOBAL_DEFAULT);
  use_callback_policy(CallbackPolicy::from_config(config));
  flush_notify_log_by_caller();  // ShardCalls flushes once per answered call
  err_log().info("dq-consume_{} starting: {} shard(s), {} deliveries in flight at most", index,
                 config.shards.size(), config.consumer_concurrency);
  int code = 0;
  {
    ConsumerLoop loop(config, "dq-consume_" + std::to_string(index));
    code = loop.run();
  }
  if (master_died()) {
    err_log().warn("dq-consume_{} stopped after its master died, with its deliveries finished",
                   index);
  } else {
    err_log().info("dq-consume_{} stopped", index);
  }
  return code;
}

}  // namespace dq
