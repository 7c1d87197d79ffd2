// The master's status file, written by dqd and read by `dqctl status`:
// <pid file>.status.json, rewritten atomically (temp file + rename) whenever
// a child starts or exits.
//   {"master_pid", "started_at_ms", "generation", "config", "pid_file",
//    "stopping", "updated_at_ms",
//    "children": [{"role","index","title","pid","generation","started_at_ms",
//                  "restarts","state"}]}
// state: running | retiring (old generation finishing after a reload) |
// respawning (waiting for its backoff; pid -1) | stopping.
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

std::string master_status_path(const std::string& pid_file);

Status write_master_status(const std::string& pid_file, const Json& status);

// kNotFound when there is no status file (dqd not running or never started).
Result<Json> read_master_status(const std::string& pid_file);

}  // namespace dq
