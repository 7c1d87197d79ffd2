// The job vocabulary shared by every role: a job's state, its compact Redis
// record, and the "topic:id" key that names it inside a shard.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dq {

enum class JobState { kDelayed, kReady, kWorking, kRetrying, kDead, kWaiting };

// Names one delivery exactly: the job's incarnation and the reserve that
// leased it. Ack and fail act only on what it names.
struct Lease {
  std::string incarnation;
  std::string reserve_id;
};

// "delayed", "ready", "working", "retrying", "dead", "waiting" (for the jobs
// its add named in "after": docs/delivery.md, "Dependencies between jobs").
const char* state_name(JobState state);

struct Job {
  std::string topic;
  std::string id;
  std::string body;  // JSON text, exactly as the producer sent it
  JobState state = JobState::kDelayed;
  int attempts = 0;  // delivery attempts made so far
  // Retry-After answers honoured (they use no attempt).
  int deferrals = 0;
  int64_t due_at_ms = 0;
  int64_t created_at_ms = 0;
  // When its first attempt began (0: none yet, or a record older than the
  // field): max_retry_duration_s counts from it.
  int64_t first_attempt_ms = 0;
  // When it expires (its ttl or expire_at, Redis ms): never delivered after
  // it. 0: never.
  int64_t expires_at_ms = 0;
  std::string last_error;  // empty unless an attempt failed
  int64_t last_error_at_ms = 0;
  std::string incarnation;  // unique per add on its shard: a re-added id is another job
  // Its due time was moved to its topic's delivery window's opening
  // (promote.lua): it waits for the window, not for a time of its own.
  bool held_by_window = false;
  // kWaiting: the keys ("topic:id") of the jobs it still waits for, when
  // read ({dq}:after).
  std::vector<std::string> after;
};

// Topics cannot contain ':', so the first ':' splits a key.
std::string job_key(std::string_view topic, std::string_view id);
bool split_job_key(std::string_view key, std::string* topic, std::string* id);
// The job keys a waiting job still waits for, as {dq}:after keeps them
// ('\n'-joined: an id holds no control character).
std::vector<std::string> split_after_keys(std::string_view joined);

// Topic: [A-Za-z0-9_.-]{1,64}. Id: any UTF-8 text of 1-256 bytes without
// control characters (C0, DEL, C1): business ids such as "订单1", "a b",
// "a/b" or "user|42" are kept as they are (URLs percent-encode them).
bool valid_topic(std::string_view topic);
bool valid_id(std::string_view id);

}  // namespace dq
