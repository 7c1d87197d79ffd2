#include "common/redis/redis_scan.h"

namespace dq {
namespace {

constexpr const char* kScanCount = "1000";

}  // namespace

Status scan_pages(RedisConnection& shard, const std::vector<std::string>& head,
                  const std::string& pattern, const ScanPage& each) {
  std::string cursor = "0";
  do {
    std::vector<std::string> argv = head;
    argv.insert(argv.end(), {cursor, "MATCH", pattern, "COUNT", kScanCount});
    auto reply = shard.command(argv);
    if (!reply.is_ok()) {
      return reply.status();
    }
    const redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
      return Status(Code::kInternal, "unexpected reply to " + head[0] + " from Redis shard " +
                                         shard.address().name());
    }
    cursor.assign(r->element[0]->str, r->element[0]->len);
    Status status = each(r->element[1]);
    if (!status.is_ok()) {
      return status;
    }
  } while (cursor != "0");
  return Status::ok();
}

Result<std::vector<std::string>> scan_keys(RedisConnection& shard, const std::string& pattern) {
  std::vector<std::string> found;
  Status status = scan_pages(shard, {"SCAN"}, pattern, [&](const redisReply* items) {
    for (size_t i = 0; i < items->elements; ++i) {
      found.emplace_back(items->element[i]->str, items->element[i]->len);
    }
    return Status::ok();
  });
  if (!status.is_ok()) {
    return status;
  }
  return found;
}

}  // namespace dq
