// Pending jobs of the PHP delay queue, read from its Redis as it stores
// them (DqRedis.php), with PREFIX "dq_" by default:
//   PREFIX job_info            hash  "topic:id" -> the body as JSON, with the
//                                    queue's notify_time and dq_set_time in it
//   PREFIX bucket_N            zset  "topic:id" scored by the due time (unix s)
//   PREFIX {1,2,3}ready_queue  list  "topic:id" due now (by topic priority)
// A "topic:id" in a bucket or ready queue without a body was already taken
// by a PHP consumer (it deletes the body first) and is skipped, as PHP did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/redis/redis_sync.h"

namespace dq::ctl {

struct PhpJob {
  std::string topic;
  std::string id;
  std::string body;               // JSON text as stored
  bool ready = false;             // in a ready queue: due now
  int64_t due_s = 0;              // from the bucket when not ready
  std::vector<std::string> keys;  // the bucket(s) and ready queue(s) holding it
};

struct PhpJobScan {
  std::vector<PhpJob> jobs;          // ordered by due time, ready ones first
  std::vector<std::string> skipped;  // "topic:id: why"
};

// Reads every pending job. Nothing is changed.
Result<PhpJobScan> scan_php_jobs(RedisConnection& redis, const std::string& prefix);

// Removes the job from the old Redis in one script: its body and its entries
// in the keys it was found in.
Status remove_php_job(RedisConnection& redis, const std::string& prefix, const PhpJob& job);

}  // namespace dq::ctl
