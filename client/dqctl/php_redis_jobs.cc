// Implements client/dqctl/php_redis_jobs.h with plain blocking commands:
// SCAN for the buckets, ZRANGE/LRANGE in pages, HMGET for the bodies.
#include "client/dqctl/php_redis_jobs.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

namespace dq::ctl {
namespace {

constexpr int kPage = 1000;

std::string text_of(const redisReply* reply) {
  return reply != nullptr && reply->str != nullptr ? std::string(reply->str, reply->len) : "";
}

Status unexpected(const std::string& command) {
  return Status(Code::kInternal, "old Redis: unexpected answer to " + command);
}

// Every key matching the pattern (SCAN, so a large Redis is not blocked).
Result<std::vector<std::string>> scan_keys(RedisConnection& redis, const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    auto reply = redis.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!reply.is_ok()) {
      return reply.status();
    }
    redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
      return unexpected("SCAN");
    }
    cursor = text_of(r->element[0]);
    for (size_t i = 0; i < r->element[1]->elements; ++i) {
      keys.push_back(text_of(r->element[1]->element[i]));
    }
  } while (cursor != "0");
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

Result<PhpJobScan> scan_php_jobs(RedisConnection& redis, const std::string& prefix) {
  std::map<std::string, PhpJob> found;  // by "topic:id"
  auto buckets = scan_keys(redis, prefix + "bucket_*");
  if (!buckets.is_ok()) {
    return buckets.status();
  }
  for (const std::string& bucket : *buckets) {
    for (int start = 0;; start += kPage) {
      auto reply = redis.command({"ZRANGE", bucket, std::to_string(start),
                                  std::to_string(start + kPage - 1), "WITHSCORES"});
      if (!reply.is_ok()) {
        return reply.status();
      }
      redisReply* r = reply->get();
      if (r->type != REDIS_REPLY_ARRAY) {
        return unexpected("ZRANGE " + bucket);
      }
      for (size_t i = 0; i + 1 < r->elements; i += 2) {
        PhpJob& job = found[text_of(r->element[i])];
        int64_t due = std::llround(std::strtod(text_of(r->element[i + 1]).c_str(), nullptr));
        job.due_s = job.keys.empty() ? due : std::min(job.due_s, due);
        job.keys.push_back(bucket);
      }
      if (r->elements < 2 * static_cast<size_t>(kPage)) {
        break;
      }
    }
  }
  for (const char* priority : {"1", "2", "3"}) {
    std::string queue = prefix + priority + "ready_queue";
    for (int start = 0;; start += kPage) {
      auto reply = redis.command(
          {"LRANGE", queue, std::to_string(start), std::to_string(start + kPage - 1)});
      if (!reply.is_ok()) {
        return reply.status();
      }
      redisReply* r = reply->get();
      if (r->type != REDIS_REPLY_ARRAY) {
        return unexpected("LRANGE " + queue);
      }
      for (size_t i = 0; i < r->elements; ++i) {
        PhpJob& job = found[text_of(r->element[i])];
        job.ready = true;
        if (std::find(job.keys.begin(), job.keys.end(), queue) == job.keys.end()) {
          job.keys.push_back(queue);
        }
      }
      if (r->elements < static_cast<size_t>(kPage)) {
        break;
      }
    }
  }

  PhpJobScan scan;
  std::vector<std::string> tids;
  tids.reserve(found.size());
  for (auto& entry : found) {
    tids.push_back(entry.first);
  }
  for (size_t start = 0; start < tids.size(); start += kPage) {
    std::vector<std::string> argv = {"HMGET", prefix + "job_info"};
    size_t end = std::min(tids.size(), start + kPage);
    argv.insert(argv.end(), tids.begin() + start, tids.begin() + end);
    auto reply = redis.command(argv);
    if (!reply.is_ok()) {
      return reply.status();
    }
    redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements != end - start) {
      return unexpected("HMGET");
    }
    for (size_t i = start; i < end; ++i) {
      const std::string& tid = tids[i];
      PhpJob job = found[tid];
      size_t colon = tid.find(':');
      if (colon == std::string::npos || colon == 0) {
        scan.skipped.push_back(tid + ": not topic:id");
        continue;
      }
      job.topic = tid.substr(0, colon);
      job.id = tid.substr(colon + 1);
      if (r->element[i - start]->type != REDIS_REPLY_STRING) {
        std::string why = tid + ": no body in ";
        why += prefix;
        why += "job_info (taken by a consumer)";
        scan.skipped.push_back(std::move(why));
        continue;
      }
      job.body = text_of(r->element[i - start]);
      scan.jobs.push_back(job);
    }
  }
  std::stable_sort(scan.jobs.begin(), scan.jobs.end(), [](const PhpJob& a, const PhpJob& b) {
    if (a.ready != b.ready) {
      return a.ready;
    }
    return a.due_s < b.due_s;
  });
  return scan;
}

Status remove_php_job(RedisConnection& redis, const std::string& prefix, const PhpJob& job) {
  static const char* kScript =
      "redis.call('HDEL', KEYS[1], ARGV[1]) "
      "for i = 2, #KEYS do "
      "  if redis.call('TYPE', KEYS[i]).ok == 'zset' then redis.call('ZREM', KEYS[i], ARGV[1]) "
      "  else redis.call('LREM', KEYS[i], 0, ARGV[1]) end "
      "end return 1";
  std::vector<std::string> argv = {"EVAL", kScript, std::to_string(job.keys.size() + 1),
                                   prefix + "job_info"};
  argv.insert(argv.end(), job.keys.begin(), job.keys.end());
  argv.push_back(job.topic + ":" + job.id);
  auto reply = redis.command(argv);
  return reply.is_ok() ? Status::ok() : reply.status();
}

}  // namespace dq::ctl
