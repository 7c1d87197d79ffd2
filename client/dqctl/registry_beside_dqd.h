// dqctl never writes a registry file that a running dqd does not read. A
// missing [sqlite] path while dqd runs means the file was deleted under it:
// dqd still serves the copy it holds, and a new, empty file made here would
// take writes ("topic added") that dqd never reads. The same when dqd holds a
// file that was replaced (its /proc link says "(deleted)"). The running
// master is seen through its status file (common/core/master_status.h).
#pragma once

#include "common/core/config.h"
#include "common/core/status.h"

namespace dq::ctl {

// ok when no dqd runs with this config, or it reads the file at the path;
// else kUnavailable saying what happened and how to put things right.
Status check_registry_beside_dqd(const Config& config);

}  // namespace dq::ctl
