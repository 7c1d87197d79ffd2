// The one map from a Status code to an HTTP status, for every role that
// answers HTTP (dq-server's API, dq-admin's JSON API). A timeout and an
// unknown outcome are both 504: a write may have happened (or, for a
// replication_timeout, did happen on the primary), and a retry is safe.
#pragma once

#include "common/core/status.h"

namespace dq {

int http_status_of(Code code);

}  // namespace dq
