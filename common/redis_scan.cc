#include "common/redis_scan.h"

namespace dq {
namespace {

constexpr const char* kScanCount = "1000";

}  // namespace

Result<std::vector<std::string>> scan_keys(RedisConnection& shard, const std::string& pattern) {
  std::vector<std::string> found;
  std::string cursor = "0";
  do {
    auto reply = shard.command({"SCAN", cursor, "MATCH", pattern, "COUNT", kScanCount});
    if (!reply.is_ok()) {
      return reply.status();
    }
    const redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
      return Status(Code::kInternal,
                    "unexpected reply to SCAN from Redis shard " + shard.address().name());
    }
    cursor.assign(r->element[0]->str, r->element[0]->len);
    for (size_t i = 0; i < r->element[1]->elements; ++i) {
      found.emplace_back(r->element[1]->element[i]->str, r->element[1]->element[i]->len);
    }
  } while (cursor != "0");
  return found;
}

}  // namespace dq
