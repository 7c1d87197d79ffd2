// count_topic_jobs and purge_topic_jobs over HSCAN pages of each shard.
#include "common/store/topic_jobs.h"

#include <functional>
#include <string_view>
#include <vector>

#include "common/redis/redis_scan.h"
#include "common/store/keys.h"
#include "common/store/placement.h"

namespace dq {
namespace {

using KeysFn = std::function<Status(const std::vector<std::string>& keys)>;

// Calls each() with every page of hash fields matching `pattern` on one
// shard. A hash may be changed meanwhile: HSCAN still returns every field
// that stays in it throughout.
Status scan_hash(RedisConnection& shard, const std::string& hash, const std::string& pattern,
                 const KeysFn& each) {
  return scan_pages(shard, {"HSCAN", hash}, pattern, [&](const redisReply* pairs) {
    std::vector<std::string> fields;
    for (size_t i = 0; i + 1 < pairs->elements; i += 2) {  // field, value, field, value...
      fields.emplace_back(pairs->element[i]->str, pairs->element[i]->len);
    }
    return fields.empty() ? Status::ok() : each(fields);
  });
}

// The fields matching `pattern` of every job record on one shard: each
// bucket hash, and the store v2 flat hash while the shard is converted.
Status scan_records(RedisConnection& shard, const std::string& pattern, const KeysFn& each) {
  auto buckets = scan_keys(shard, keys::records_prefix() + "*");
  if (!buckets.is_ok()) {
    return buckets.status();
  }
  buckets->push_back(keys::flat_records());  // HSCAN of a missing key: nothing
  for (const auto& bucket : *buckets) {
    Status status = scan_hash(shard, bucket, pattern, each);
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

Status refused(const std::string& what, const std::string& topic, const Status& status) {
  return Status(status.code(),
                "cannot " + what + " topic " + topic + "'s jobs: " + status.message());
}

// Deletes every job of the topic on one shard; adds how many to *deleted,
// and how many of them were being delivered (state w) to *in_flight.
Status delete_jobs(RedisConnection& shard, const std::string& topic,
                   const std::vector<std::string>& shard_names, int64_t* deleted,
                   int64_t* in_flight) {
  return scan_records(shard, topic + ":*", [&](const std::vector<std::string>& found) {
    std::vector<ScriptCall> calls;
    std::string key_topic, id;
    for (const auto& key : found) {
      if (split_job_key(key, &key_topic, &id)) {
        calls.push_back(del_call(topic, id, /*tomb=*/false, shard_names));
      }
    }
    for (auto& reply : shard.run_all(calls)) {
      if (!reply.is_ok()) {
        return reply.status();
      }
      const redisReply* r = reply->get();  // {1, state} deleted, {0, ''} gone meanwhile
      if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
          r->element[0]->type == REDIS_REPLY_INTEGER) {
        *deleted += r->element[0]->integer;
        const redisReply* state = r->element[1];
        *in_flight +=
            state->type == REDIS_REPLY_STRING && std::string_view(state->str, state->len) == "w";
      }
    }
    return Status::ok();
  });
}

// Removes the topic's leftovers on one shard: its per-topic keys and its
// "<topic>:<counter>" fields in the event counter hashes (days, totals,
// minutes).
Status delete_leftovers(RedisConnection& shard, const std::string& topic) {
  auto deleted = shard.command({"DEL", keys::ready(topic), keys::dead(topic)});
  if (!deleted.is_ok()) {
    return deleted.status();
  }
  std::vector<std::string> counts = {"HDEL", keys::counts()};
  for (const char* state : {"d", "r", "w", "y", "x", "h"}) {
    counts.push_back(topic + ":" + state);
  }
  auto counted = shard.command(counts);
  if (!counted.is_ok()) {
    return counted.status();
  }
  std::vector<std::string> hashes = {keys::totals()};
  for (const std::string& pattern : {keys::stats("*"), keys::minute_prefix() + "*"}) {
    auto found = scan_keys(shard, pattern);
    if (!found.is_ok()) {
      return found.status();
    }
    hashes.insert(hashes.end(), found->begin(), found->end());
  }
  for (const auto& hash : hashes) {
    Status status =
        scan_hash(shard, hash, topic + ":*", [&](const std::vector<std::string>& found) {
          std::vector<std::string> argv = {"HDEL", hash};
          argv.insert(argv.end(), found.begin(), found.end());
          auto reply = shard.command(argv);
          return reply.is_ok() ? Status::ok() : reply.status();
        });
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

}  // namespace

Result<int64_t> count_topic_jobs(JobStore& store, const std::string& topic) {
  int64_t total = 0;
  for (size_t i = 0; i < store.shard_count(); ++i) {
    Status status =
        scan_records(store.shard(i), topic + ":*", [&](const std::vector<std::string>& found) {
          total += static_cast<int64_t>(found.size());
          return Status::ok();
        });
    if (!status.is_ok()) {
      return refused("count", topic, status);
    }
  }
  return total;
}

Result<int64_t> purge_topic_jobs(JobStore& store, const std::string& topic, int64_t* in_flight) {
  int64_t delivering = 0;
  for (size_t i = 0; i < store.shard_count(); ++i) {
    Status up = store.shard(i).ensure_connected();
    if (!up.is_ok()) {
      return refused("purge", topic, up);
    }
  }
  int64_t deleted = 0;
  for (size_t i = 0; i < store.shard_count(); ++i) {
    Status status =
        delete_jobs(store.shard(i), topic, shard_names(store.addresses()), &deleted, &delivering);
    if (!status.is_ok()) {
      return refused("purge", topic, status);
    }
  }
  // Dead-set members whose record was already gone.
  auto dead = store.dead_purge(topic);
  if (!dead.is_ok()) {
    return refused("purge", topic, dead.status());
  }
  for (size_t i = 0; i < store.shard_count(); ++i) {
    Status status = delete_leftovers(store.shard(i), topic);
    if (!status.is_ok()) {
      return refused("purge", topic, status);
    }
  }
  if (in_flight != nullptr) {
    *in_flight += delivering;
  }
  return deleted + *dead;
}

}  // namespace dq
