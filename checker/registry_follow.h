// The registry sync of a host ([registry] shared = yes): dq-redis-checker
// runs RegistrySync (common/registry/registry_sync.h) every 250 ms on a
// thread of its own until stopped, so a change made on any host reaches
// this host's SQLite copy within a second, and every role here reads it
// from there. While the shared copy cannot be reached, the roles go on with
// the last copy; the failure is logged when it starts and when it ends.
#pragma once

#include "common/core/config.h"

namespace dq {

void follow_shared_registry(const Config& config);

}  // namespace dq
