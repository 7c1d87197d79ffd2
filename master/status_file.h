// The status file `dqctl status` reads: <pid file>.status.json, rewritten
// atomically (temp file + rename) whenever a child starts or exits.
//   {"master_pid", "started_at_ms", "generation", "config", "updated_at_ms",
//    "children": [{"role","index","title","pid","generation","started_at_ms",
//                  "restarts","state"}]}
// state: running | retiring (old generation finishing) | respawning (waiting
// for its backoff; pid -1).
#pragma once

#include <string>

#include "common/json.h"
#include "common/status.h"

namespace dq {

std::string status_file_path(const std::string& pid_file);

Status write_status_file(const std::string& pid_file, const Json& status);

}  // namespace dq
