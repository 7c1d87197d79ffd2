// Logging: one file per kind per day in [log] dir, written by every process
// (lines are appended whole, so processes can share a file):
//   request_YYYYMMDD.log  add/get/del seen by the API servers
//   notify_YYYYMMDD.log   every delivery attempt
//   err_YYYYMMDD.log      errors and warnings of any process
// Each line carries the process title (dq-server_0, dq-consume_1, ...).
// [log] format = json writes one JSON object per line instead, for log
// shippers; [log] keep_days makes the master remove older daily files.
#pragma once

#include <spdlog/spdlog.h>

#include <functional>
#include <string>

namespace dq {

// Creates the log dir when needed. Safe to call again (e.g. after fork or on
// SIGHUP) to reopen the files. With an empty dir, logs go to stderr only.
void init_logging(const std::string& dir, const std::string& level, const std::string& title);

// How lines are written, for init_logging calls from now on in this process
// and its forked children. The master sets it from the config (and again on
// reload, before it starts the new generation).
enum class LogFormat { kText, kJson };
void set_log_format(LogFormat format);

// Keeps the daily files of the last keep_days days, today included (1: today
// only): removes older request_/notify_/err_YYYYMMDD.log files in `dir` and
// their rotated copies (.1, .gz). keep_days <= 0 keeps everything. Returns how many files were
// removed.
int remove_old_logs(const std::string& dir, int keep_days, const std::string& today);

// The request log writes each line as it is logged (a kill -9 loses no
// line). A process answering many requests per second can instead pass
// `schedule`: each line then calls it, and the lines reach the file when the
// process calls flush_request_log() (the API server: on a 100 ms timer, one
// write for thousands of lines), when its 1 MiB buffer is half full, and when
// logs are reopened; every write holds whole lines. nullptr restores the
// per-line flush (and flushes). Applies to reopened logs too.
void defer_request_log_flush(std::function<void()> schedule);
void flush_request_log();
// The notify log is flushed after every line unless a process says it
// flushes it itself (the consumer: once per batch of recorded outcomes, one
// write instead of one per delivery). Kept across reopens (SIGHUP).
void flush_notify_log_by_caller();

spdlog::logger& request_log();
spdlog::logger& notify_log();
spdlog::logger& err_log();  // also echoed to stderr

}  // namespace dq
