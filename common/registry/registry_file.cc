// Implements common/registry/registry_file.h.
#include "common/registry/registry_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <mutex>
#include <set>

namespace dq {
namespace {

// Absolute and without "." or "..", so two spellings of one path match; the
// file itself may be gone.
std::string normal_path(const std::string& path) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

std::mutex& opened_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::set<std::string>& opened_files() {
  static std::set<std::string> files;
  return files;
}

}  // namespace

FileFate file_fate(sqlite3* db) {
  int moved = 0;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) != SQLITE_OK || !moved) {
    return FileFate::kInPlace;
  }
  const char* path = sqlite3_db_filename(db, "main");
  struct stat seen {};
  if (path == nullptr || *path == '\0' || stat(path, &seen) != 0) {
    return FileFate::kDeleted;
  }
  return FileFate::kReplaced;
}

std::string file_fate_message(FileFate fate, const std::string& path) {
  if (fate == FileFate::kInPlace) {
    return "";
  }
  return "the registry file " + path +
         (fate == FileFate::kDeleted ? " was deleted" : " was replaced by another file") +
         " while dq runs: this process still serves the topics, tokens and settings it read "
         "from the file it opened, and refuses registry writes (no other process would read "
         "them). dqd takes the file at that path at its next start (docs/registry.md, \"The "
         "file deleted or replaced under a running dq\")";
}

Status check_registry_file(sqlite3* db) {
  FileFate fate = file_fate(db);
  if (fate == FileFate::kInPlace) {
    return Status::ok();
  }
  const char* path = sqlite3_db_filename(db, "main");
  return Status(Code::kUnavailable,
                file_fate_message(fate, path ? path : "") + "; nothing was written");
}

void remember_opened_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(opened_mutex());
  opened_files().insert(normal_path(path));
}

bool opened_before(const std::string& path) {
  std::lock_guard<std::mutex> lock(opened_mutex());
  return opened_files().count(normal_path(path)) > 0;
}

}  // namespace dq
