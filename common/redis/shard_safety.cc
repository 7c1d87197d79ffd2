// Implements the shard safety check (see shard_safety.h) from INFO fields.
#include "common/redis/shard_safety.h"

#include <cstdlib>
#include <map>
#include <sstream>

namespace dq {
namespace {

using InfoFields = std::map<std::string, std::string>;

// "key:value" lines of an INFO reply; "# Section" and blank lines skipped.
InfoFields parse_info(const std::string& text) {
  InfoFields fields;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty() || line[0] == '#') {
      continue;
    }
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      fields[line.substr(0, colon)] = line.substr(colon + 1);
    }
  }
  return fields;
}

Result<InfoFields> info(RedisConnection& connection, const char* section) {
  auto reply = connection.command({"INFO", section});
  if (!reply.is_ok()) {
    return reply.status();
  }
  if ((*reply)->type != REDIS_REPLY_STRING) {
    return Status(Code::kInternal, "INFO " + std::string(section) + " is not text");
  }
  return parse_info(std::string((*reply)->str, (*reply)->len));
}

int64_t to_int(const InfoFields& fields, const std::string& key) {
  auto it = fields.find(key);
  if (it == fields.end()) {
    return 0;
  }
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    return 0;
  }
}

std::string mib(int64_t bytes) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

// A failure other than Redis refusing the command (an error reply): the shard
// stopped answering or the connection dropped, and every later command of
// the check would wait as long. The check ends there.
bool connection_lost(const Status& status) {
  return !status.is_ok() && status.code() != Code::kInternal;
}

}  // namespace

Json ShardSafety::to_json() const {
  return Json{{"persistence", persistence},
              {"appendfsync", appendfsync},
              {"rdb_save", rdb_save},
              {"eviction_policy", eviction_policy},
              {"used_memory", used_memory},
              {"maxmemory", maxmemory},
              {"unsafe", unsafe},
              {"warnings", warnings},
              {"connected_replicas", connected_replicas}};
}

// The listpack limits dq asks of a shard, and what falls short of each does.
struct ListpackLimit {
  const char* setting;
  int64_t wanted;
  const char* below;  // what a lower value costs
  const char* above;  // what a higher value costs; nullptr: a higher value is fine
};
// Records of up to 256 bytes of body must fit a listpack value. 128 entries
// keep buckets listpacks up to ~6M pending per shard; beyond, a bucket of
// ~200 records turns into a hashtable. Redis's default, 512, keeps it a
// 27 KB listpack that every HSETNX, HMGET and HDEL scans (bench/README.md:
// at 10M pending the add rate falls to ~0.5 of the empty shard's instead of
// ~0.7). A bucket's due zset (keys and scores only, ~8 KB at 200) is cheaper
// as a listpack up to 256: at 10M pending a quarter less memory and half the
// promote stalls. {dq}:working stays a skiplist whatever the limit (its
// anchor, common/store/lua/lib/prelude.lua), so leases do not pay for it.
constexpr ListpackLimit kListpackLimits[] = {
    {"hash-max-listpack-entries", 128,
     "job record buckets turn into hashtables sooner, at about twice the memory per job",
     "past ~6M pending jobs per shard every add and promote scans record buckets of up to that "
     "many records"},
    {"hash-max-listpack-value", 512, "job records take about twice the memory", nullptr},
    {"zset-max-listpack-entries", 256,
     "past ~6M pending jobs per shard the buckets' due zsets turn into skiplists: about a "
     "quarter more memory per job and slower promotes",
     nullptr}};

Result<ShardSafety> check_shard_safety(RedisConnection& connection, int memory_warn_percent) {
  const std::string shard = connection.address().name();
  const std::string cli = "redis-cli -h " + connection.address().host + " -p " +
                          std::to_string(connection.address().port);
  auto persistence = info(connection, "persistence");
  if (!persistence.is_ok()) {
    return persistence.status();
  }
  auto memory = info(connection, "memory");
  if (!memory.is_ok()) {
    return memory.status();
  }

  ShardSafety safety;
  bool aof = to_int(*persistence, "aof_enabled") == 1;
  bool rdb_known = true;
  bool rdb = false;
  auto save = connection.command({"CONFIG", "GET", "save"});
  if (save.is_ok() && (*save)->type == REDIS_REPLY_ARRAY && (*save)->elements == 2) {
    const redisReply* value = (*save)->element[1];
    rdb = value->type == REDIS_REPLY_STRING && value->len > 0;
    if (rdb) {
      safety.rdb_save.assign(value->str, value->len);
    }
  } else {
    rdb_known = false;
    safety.rdb_save = "?";
    if (!save.is_ok() && connection_lost(save.status())) {
      return save.status();
    }
    if (!aof) {
      safety.warnings.push_back("shard " + shard +
                                ": cannot tell whether RDB snapshots are on (CONFIG GET save "
                                "refused) and AOF is off; fix: turn AOF on (appendonly yes in "
                                "redis.conf)");
    }
  }
  if (aof) {
    // What a crash of the machine can lose: up to a second of writes with
    // everysec, none with always (docs/RELIABILITY.md).
    auto fsync = connection.command({"CONFIG", "GET", "appendfsync"});
    if (!fsync.is_ok() && connection_lost(fsync.status())) {
      return fsync.status();
    }
    safety.appendfsync = "?";
    if (fsync.is_ok() && (*fsync)->type == REDIS_REPLY_ARRAY && (*fsync)->elements == 2 &&
        (*fsync)->element[1]->type == REDIS_REPLY_STRING) {
      safety.appendfsync.assign((*fsync)->element[1]->str, (*fsync)->element[1]->len);
    }
  }
  if (aof && rdb) {
    safety.persistence = "aof+rdb";
  } else if (aof) {
    safety.persistence = "aof";
  } else if (rdb) {
    safety.persistence = "rdb";
  } else {
    safety.persistence = rdb_known ? "off" : "unknown";
  }
  if (safety.persistence == "rdb") {
    // Snapshots alone: a crash (kill -9, OOM killer, power) brings back the
    // last snapshot, and every job accepted after it is gone without a trace.
    safety.unsafe.push_back(
        "shard " + shard + " saves only RDB snapshots (save " + safety.rdb_save +
        "), no AOF: a crash loses every job accepted since the last snapshot; fix: " + cli +
        " CONFIG SET appendonly yes, then CONFIG SET appendfsync everysec and CONFIG REWRITE "
        "(or appendonly yes and appendfsync everysec in redis.conf)");
  }
  if (safety.persistence == "off") {
    safety.unsafe.push_back("shard " + shard +
                            " has persistence off (neither AOF nor RDB): a restart loses every "
                            "job; fix: " +
                            cli +
                            " CONFIG SET appendonly yes, then CONFIG REWRITE (or appendonly yes "
                            "in redis.conf)");
  }

  // For [redis] wait_replicas (common/redis/replica_wait.h); a failure here is not
  // a safety problem.
  auto replication = info(connection, "replication");
  if (!replication.is_ok() && connection_lost(replication.status())) {
    return replication.status();
  }
  if (replication.is_ok() && replication->count("connected_slaves") > 0) {
    safety.connected_replicas = static_cast<int>(to_int(*replication, "connected_slaves"));
  }

  safety.used_memory = to_int(*memory, "used_memory");
  safety.maxmemory = to_int(*memory, "maxmemory");
  auto policy = memory->find("maxmemory_policy");
  safety.eviction_policy = policy == memory->end() ? "unknown" : policy->second;
  if (safety.eviction_policy != "noeviction") {
    safety.unsafe.push_back(
        "shard " + shard + " has maxmemory-policy " + safety.eviction_policy +
        ": Redis deletes jobs when memory is full; fix: " + cli +
        " CONFIG SET maxmemory-policy noeviction, then CONFIG REWRITE (or maxmemory-policy "
        "noeviction in redis.conf)");
  }
  // Job record buckets (common/store/keys.h) hold ~20 records per million pending
  // jobs of a few hundred bytes each; past these limits Redis turns a bucket
  // into a hashtable or skiplist: still correct, more memory per job.
  for (const ListpackLimit& limit : kListpackLimits) {
    const char* setting = limit.setting;
    auto value = connection.command({"CONFIG", "GET", setting});
    if (!value.is_ok() && connection_lost(value.status())) {
      return value.status();
    }
    if (!value.is_ok() || (*value)->type != REDIS_REPLY_ARRAY || (*value)->elements != 2 ||
        (*value)->element[1]->type != REDIS_REPLY_STRING) {
      continue;  // CONFIG refused: nothing to tell
    }
    long long have = std::strtoll((*value)->element[1]->str, nullptr, 10);
    const char* cost = have < limit.wanted   ? limit.below
                       : have > limit.wanted ? limit.above
                                             : nullptr;
    if (cost != nullptr) {
      const std::string wanted = std::to_string(limit.wanted);
      std::ostringstream warning;
      warning << "shard " << shard << " has " << setting << " " << (*value)->element[1]->str << ": "
              << cost << "; fix: " << cli << " CONFIG SET " << setting << " " << wanted
              << ", then CONFIG REWRITE (or " << setting << " " << wanted << " in redis.conf)";
      safety.warnings.push_back(warning.str());
    }
  }
  if (safety.maxmemory > 0 &&
      safety.used_memory * 100 > safety.maxmemory * static_cast<int64_t>(memory_warn_percent)) {
    safety.warnings.push_back("shard " + shard + " uses " + mib(safety.used_memory) +
                              " of maxmemory " + mib(safety.maxmemory) + " (" +
                              std::to_string(safety.used_memory * 100 / safety.maxmemory) +
                              "%, warning above " + std::to_string(memory_warn_percent) +
                              "%): adds fail once it is full; fix: raise maxmemory (" + cli +
                              " CONFIG SET maxmemory <bytes>, then CONFIG REWRITE) or add a shard");
  }
  return safety;
}

std::string describe_problems(const ShardSafety& safety) {
  std::string text;
  for (const auto& problem : safety.unsafe) {
    text += (text.empty() ? "" : "; ") + problem;
  }
  for (const auto& warning : safety.warnings) {
    text += (text.empty() ? "" : "; ") + warning;
  }
  return text;
}

}  // namespace dq
