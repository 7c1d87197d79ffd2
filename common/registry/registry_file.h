// What became of the registry's SQLite file while a process has it open. A
// file deleted (or replaced by another) under a running dq is still read
// through the open connection, but nothing written elsewhere reaches it and
// nothing written to it reaches anyone: a silent split. dq notices, by
// SQLite's own test (SQLITE_FCNTL_HAS_MOVED: the path is gone or names
// another inode), and:
//   - keeps serving what it read, refuses registry writes
//     (check_registry_file) and says so: err log, /healthz, a metric;
//   - does not open what is now at the path: SQLite would read a file moved
//     there together with the old file's journal (<path>-wal), which still
//     holds its recent pages. A restart of dqd takes the file at the path;
//   - never creates the file again in a process that had it open (or whose
//     master had: children inherit it), so a respawned child cannot make an
//     empty registry beside the one the others hold (open_sqlite).
// docs/registry.md, "The file deleted or replaced under a running dq".
#pragma once

#include <sqlite3.h>

#include <string>

#include "common/core/status.h"

namespace dq {

enum class FileFate { kInPlace, kDeleted, kReplaced };

// The fate of the main database file of `db` (kInPlace for an in-memory one).
FileFate file_fate(sqlite3* db);

// kUnavailable saying what happened to the file of `db` and what to do;
// ok while it is in place. For writes: nothing is written to a lost file.
Status check_registry_file(sqlite3* db);

// The sentence check_registry_file says for `fate` of `path`.
std::string file_fate_message(FileFate fate, const std::string& path);

// Remembered by open_sqlite for every file it opened in this process (and
// inherited by forked children): such a file is never created again.
void remember_opened_file(const std::string& path);
bool opened_before(const std::string& path);

}  // namespace dq
