#include "common/core/status.h"

namespace dq {

const char* code_name(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalid:
      return "invalid";
    case Code::kNotFound:
      return "not_found";
    case Code::kConflict:
      return "conflict";
    case Code::kTooLarge:
      return "too_large";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kTimeout:
      return "timeout";
    case Code::kUnknown:
      return "outcome_unknown";
    case Code::kInternal:
      return "internal";
  }
  return "unknown";
}

}  // namespace dq
