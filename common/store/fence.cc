// Implements common/store/fence.h.
#include "common/store/fence.h"

#include "common/store/keys.h"

namespace dq {
namespace {

// ZADD of every ARGV at Redis's now (ms): one round trip, one clock.
constexpr const char* kFence =
    "local t = redis.call('TIME') "
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
    "for _, name in ipairs(ARGV) do redis.call('ZADD', KEYS[1], now, name) end "
    "return 1";

// The same for ARGV[2], then the record of ARGV[1] (as record_read_argv).
constexpr const char* kFencedReadRecord =
    "local t = redis.call('TIME') "
    "redis.call('ZADD', KEYS[3], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), "
    "ARGV[2]) "
    "return redis.call('HGET', KEYS[1], ARGV[1]) or redis.call('HGET', KEYS[2], ARGV[1])";

}  // namespace

std::vector<std::string> fence_argv(const std::vector<std::string>& homes) {
  std::vector<std::string> argv = {"EVAL", kFence, "1", keys::fence()};
  argv.insert(argv.end(), homes.begin(), homes.end());
  return argv;
}

std::vector<std::string> fenced_record_read_argv(std::string_view job_key,
                                                 const std::string& home) {
  return {"EVAL",        kFencedReadRecord,    "3", keys::records_of(job_key), keys::flat_records(),
          keys::fence(), std::string(job_key), home};
}

}  // namespace dq
