// Implements the sending of dead-letter callbacks (see dead_callback_loop.h).
#include "checker/dead_callback_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/alerts/webhook.h"
#include "common/core/clock.h"
#include "common/core/json_check.h"
#include "common/core/json_span.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/core/stop_flag.h"
#include "common/http/webhook_signature.h"

namespace dq {
namespace {

constexpr int kDeadCallbackTurnMs = 250;
constexpr int kEntriesPerTurn = 50;              // per shard; the next turn takes the rest
constexpr int kMaxSendMs = 30000;                // a send's timeout: the topic's, at most this
constexpr int64_t kLeaseMs = kMaxSendMs + 5000;  // outlives one send
constexpr int64_t kFirstWaitMs = 1000;
constexpr int64_t kMaxWaitMs = 300000;                         // 5 min between sends at most
constexpr int64_t kGiveUpAfterMs = int64_t{24} * 3600 * 1000;  // a day after the job died

int64_t retry_wait_ms(int tries) {
  int shift = std::min(std::max(tries, 0), 20);
  return std::min<int64_t>(kFirstWaitMs << shift, kMaxWaitMs);
}

void count(const std::string& topic, const char* outcome) {
  SharedMetrics::instance().add(SharedMetrics::key({"dead_callback", topic, outcome}));
}

void append_number(std::string* out, int64_t value) { *out += std::to_string(value); }

// The document a dead-letter callback POSTs.
std::string dead_callback_json(const DeadCallbackEntry& entry) {
  std::string out = "{\"event\":\"dead\",\"topic\":";
  append_json_string(&out, entry.topic);
  out += ",\"id\":";
  append_json_string(&out, entry.id);
  out += ",\"body\":";
  // As the job's callbacks carry it: the producer's JSON as sent, anything
  // else as a JSON string.
  out += plainly_json(entry.body) ? entry.body : embeddable_json(entry.body);
  out += ",\"attempts\":";
  append_number(&out, entry.attempts);
  out += ",\"last_error\":";
  append_json_string(&out, entry.last_error);
  out += ",\"died_at_ms\":";
  append_number(&out, entry.died_at_ms);
  out += ",\"created_at_ms\":";
  append_number(&out, entry.created_at_ms);
  out += "}";
  return out;
}

std::string host_name() {
  char name[256] = "";
  if (gethostname(name, sizeof(name) - 1) != 0) {
    return "host";
  }
  return name;
}

}  // namespace

DeadCallbackLoop::DeadCallbackLoop(const Config& config)
    : config_(config),
      topics_(config.sqlite_path),
      policy_(CallbackPolicy::from_config(config)),
      claim_(host_name() + ":" + std::to_string(getpid()) + ":" + std::to_string(now_ms())) {
  for (const auto& address : config.shards) {
    shards_.push_back(std::make_unique<RedisConnection>(address, config.redis_connect_timeout_ms,
                                                        config.redis_command_timeout_ms));
    outages_.emplace_back(spdlog::level::warn);
  }
}

void DeadCallbackLoop::run() {
  while (!stop_requested()) {
    topics_.refresh_if_older(config_.registry_refresh_ms);
    int handled = 0;
    // Entries exist only for topics with a dead_callback (the scripts write
    // none otherwise): without one, no Redis call at all. Entries of a
    // callback removed since are still sent (or given up) while any is set.
    bool any_dead_callback = false;
    for (const auto& [name, topic] : topics_.all()) {
      any_dead_callback = any_dead_callback || !topic.dead_callback.empty();
    }
    for (size_t shard = 0; any_dead_callback && shard < shards_.size() && !stop_requested();
         ++shard) {
      handled += turn(shard);
    }
    if (handled > 0) {
      continue;  // more may be due
    }
    int64_t next = monotonic_ms() + kDeadCallbackTurnMs;
    while (!stop_requested() && monotonic_ms() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
}

int DeadCallbackLoop::turn(size_t index) {
  RedisConnection& shard = *shards_[index];
  int handled = 0;
  while (handled < kEntriesPerTurn && !stop_requested()) {
    auto claimed = claim_dead_callbacks(shard, 1, kLeaseMs, claim_);
    if (!claimed.is_ok()) {
      outages_[index].note("checker: dead-letter callbacks of shard " + shard.address().name() +
                           " wait: " + claimed.status().message());
      return handled;
    }
    if (outages_[index].clear()) {
      err_log().info("checker: dead-letter callbacks of shard {} go out again",
                     shard.address().name());
    }
    if (claimed->entries.empty()) {
      return handled;
    }
    for (const auto& entry : claimed->entries) {
      send(shard, entry, claimed->redis_now_ms);
      ++handled;
    }
  }
  return handled;
}

void DeadCallbackLoop::send(RedisConnection& shard, const DeadCallbackEntry& entry,
                            int64_t redis_now_ms) {
  const Topic* topic = topics_.find_or_reload(entry.topic);
  if (topic == nullptr) {
    // Unknown here: deleted, or not yet copied to this host's registry.
    return retry(shard, entry, redis_now_ms, "topic '" + entry.topic + "' is not in the registry");
  }
  if (topic->dead_callback.empty()) {
    err_log().info("checker: dead-letter callback of {}/{} not sent: the topic has none now",
                   entry.topic, entry.id);
    return finish(shard, entry, "dropped");
  }
  std::string body = dead_callback_json(entry);
  std::string message_id =
      dead_letter_message_id(entry.topic, entry.id, entry.incarnation, entry.died_at_ms);
  int64_t now = now_ms();
  std::vector<std::string> headers = {"X-DQ-Topic: " + entry.topic, "X-DQ-Id: " + entry.id,
                                      "X-DQ-Event: dead"};
  size_t plain = headers.size();
  append_webhook_headers(*topic, message_id, now, body, &headers);
  if (headers.size() == plain) {
    // Unsigned: the receiver still gets the id it dedups on.
    headers.push_back("webhook-id: " + message_id);
    headers.push_back("webhook-timestamp: " + std::to_string(now / 1000));
  }
  int timeout_ms = std::min(topic->timeout_ms, kMaxSendMs);
  auto posted =
      post_json(topic->dead_callback, body, headers, timeout_ms, &policy_, "dead_callback");
  if (posted.is_ok()) {
    err_log().info("checker: dead-letter callback of {}/{} taken: {}", entry.topic, entry.id,
                   posted->text());
    return finish(shard, entry, "sent");
  }
  count(entry.topic, "failed");
  retry(shard, entry, redis_now_ms, posted.status().message());
}

void DeadCallbackLoop::retry(RedisConnection& shard, const DeadCallbackEntry& entry,
                             int64_t redis_now_ms, const std::string& error) {
  if (redis_now_ms - entry.died_at_ms >= kGiveUpAfterMs) {
    err_log().error(
        "checker: dead-letter callback of {}/{} given up after {} tries over a day: {} "
        "(the job stays in the dead letters)",
        entry.topic, entry.id, entry.tries + 1, error);
    return finish(shard, entry, "given_up");
  }
  int64_t wait = retry_wait_ms(entry.tries);
  err_log().warn("checker: dead-letter callback of {}/{} not taken (try {}), again in {} ms: {}",
                 entry.topic, entry.id, entry.tries + 1, wait, error);
  auto retried = retry_dead_callback(shard, entry.number, claim_, wait, error);
  if (!retried.is_ok()) {
    // Its lease ends and it is sent again: nothing is lost.
    err_log().error("checker: cannot reschedule the dead-letter callback of {}/{}: {}", entry.topic,
                    entry.id, retried.status().message());
  }
}

void DeadCallbackLoop::finish(RedisConnection& shard, const DeadCallbackEntry& entry,
                              const char* outcome) {
  count(entry.topic, outcome);
  Status removed = finish_dead_callback(shard, entry.number);
  if (!removed.is_ok()) {
    // It is sent again after its lease: at least once.
    err_log().error(
        "checker: cannot remove the dead-letter callback of {}/{} ({}); it may be "
        "sent again",
        entry.topic, entry.id, removed.message());
  }
}

}  // namespace dq
