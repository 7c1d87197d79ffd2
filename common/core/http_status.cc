// Implements common/core/http_status.h.
#include "common/core/http_status.h"

namespace dq {

int http_status_of(Code code) {
  switch (code) {
    case Code::kOk:
      return 200;
    case Code::kInvalid:
      return 400;
    case Code::kNotFound:
      return 404;
    case Code::kConflict:
      return 409;
    case Code::kTooLarge:
      return 413;
    case Code::kUnavailable:
      return 503;
    case Code::kTimeout:
    case Code::kUnknown:
      return 504;
    case Code::kInternal:
      return 500;
  }
  return 500;
}

}  // namespace dq
