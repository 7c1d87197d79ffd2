// dqctl's versioned write of one registry object (common/registry/registry_write.h):
// through the shared registry when the config says [registry] shared = yes.
#pragma once

#include "client/dqctl/command.h"
#include "common/registry/registry.h"
#include "common/registry/registry_write.h"

namespace dq::ctl {

// A stale version: kConflict ("was changed by someone else"); the shared
// registry's shard unreachable: kUnavailable, nothing written.
Status write_registry_change(const CtlOptions& options, Registry& registry,
                             const ObjectWrite& write);

}  // namespace dq::ctl
