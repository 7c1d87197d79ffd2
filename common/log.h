// Logging: one file per kind per day in [log] dir, written by every process
// (lines are appended whole, so processes can share a file):
//   request_YYYYMMDD.log  add/get/del seen by the API servers
//   notify_YYYYMMDD.log   every delivery attempt
//   err_YYYYMMDD.log      errors and warnings of any process
// Each line carries the process title (dq-server_0, dq-consume_1, ...).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace dq {

// Creates the log dir when needed. Safe to call again (e.g. after fork or on
// SIGHUP) to reopen the files. With an empty dir, logs go to stderr only.
void init_logging(const std::string& dir, const std::string& level, const std::string& title);

spdlog::logger& request_log();
spdlog::logger& notify_log();
spdlog::logger& err_log();  // also echoed to stderr

}  // namespace dq
