#include "common/store/job_records.h"

#include "common/store/keys.h"

namespace dq {
namespace {

// Read-only; Redis caches the compiled script by the hash of its text.
constexpr const char* kReadRecord =
    "return redis.call('HGET', KEYS[1], ARGV[1]) or redis.call('HGET', KEYS[2], ARGV[1])";

// A record read's reply -> the record, nullopt when absent, false on anything else.
bool take_record(const redisReply* r, std::vector<std::optional<std::string>>* out) {
  if (r->type == REDIS_REPLY_STRING) {
    out->emplace_back(std::string(r->str, r->len));
  } else if (r->type == REDIS_REPLY_NIL) {
    out->emplace_back(std::nullopt);
  } else {
    return false;
  }
  return true;
}

Status unexpected_reply(RedisConnection& shard) {
  return Status(Code::kInternal,
                "unexpected reply to a record read from Redis shard " + shard.address().name());
}

}  // namespace

std::vector<std::string> record_read_argv(std::string_view job_key) {
  return {"EVAL",
          kReadRecord,
          "2",
          keys::records_of(job_key),
          keys::flat_records(),
          std::string(job_key)};
}

Result<std::vector<std::optional<std::string>>> read_records(RedisConnection& shard,
                                                             const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> commands;
  commands.reserve(keys.size());
  for (const auto& key : keys) {
    commands.push_back(record_read_argv(key));
  }
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (auto& reply : shard.command_all(commands)) {
    if (!reply.is_ok()) {
      return reply.status();
    }
    if (!take_record(reply->get(), &out)) {
      return unexpected_reply(shard);
    }
  }
  return out;
}

Result<std::vector<std::optional<std::string>>> read_flat_records(
    RedisConnection& shard, const std::vector<std::string>& keys) {
  std::vector<std::string> argv = {"HMGET", keys::flat_records()};
  argv.insert(argv.end(), keys.begin(), keys.end());
  auto reply = shard.command(argv);
  if (!reply.is_ok()) {
    return reply.status();
  }
  const redisReply* r = reply->get();
  if (r->type != REDIS_REPLY_ARRAY || r->elements != keys.size()) {
    return unexpected_reply(shard);
  }
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < r->elements; ++i) {
    if (!take_record(r->element[i], &out)) {
      return unexpected_reply(shard);
    }
  }
  return out;
}

}  // namespace dq
