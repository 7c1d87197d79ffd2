// Implements common/redis/redis_refusal.h.
#include "common/redis/redis_refusal.h"

namespace dq {

bool is_state_refusal(std::string_view error) {
  // The first word of the reply is Redis's error code ("BUSY" is followed by
  // a space, so BUSYKEY, a RESTORE error, is not one).
  static constexpr std::string_view kCodes[] = {"OOM ",  "READONLY ",   "MISCONF ",    "LOADING ",
                                                "BUSY ", "MASTERDOWN ", "NOREPLICAS ", "NOAUTH "};
  for (std::string_view code : kCodes) {
    if (error.substr(0, code.size()) == code) {
      return true;
    }
  }
  return false;
}

bool is_role_change_refusal(std::string_view error) {
  static constexpr std::string_view kCodes[] = {"READONLY ", "LOADING ", "MASTERDOWN "};
  for (std::string_view code : kCodes) {
    if (error.substr(0, code.size()) == code) {
      return true;
    }
  }
  return false;
}

Status refusal_status(const std::string& shard_name, std::string_view error) {
  return Status(Code::kUnavailable, "Redis shard " + shard_name + " refused the command: " +
                                        std::string(error) + " (nothing was written)");
}

}  // namespace dq
