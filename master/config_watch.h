// ConfigWatch: notices that the config file changed, so the master reloads
// on its own, and hands a change over only once the file is whole and
// stable. Looked at about twice a second: stat() first (mtime, size, inode),
// the contents only when it differs or a change is settling. A change is
// handed over once the file kept the same size, mtime, inode and contents
// for settle_ms (an editor or `cp` still writing it keeps changing it), and
// only once: a change the master refused is not offered again until the
// file changes once more. `touch` alone changes nothing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace dq {

// The same file seen twice: equal only when nothing about it moved.
struct FileLook {
  bool exists = false;
  int64_t mtime_ns = -1;
  off_t size = -1;
  ino_t inode = 0;
  std::string contents;

  bool same_stat(const FileLook& other) const {
    return exists == other.exists && mtime_ns == other.mtime_ns && size == other.size &&
           inode == other.inode;
  }
};

class ConfigWatch {
 public:
  ConfigWatch(std::string path, int64_t settle_ms);

  // What one look found.
  struct Change {
    std::string contents;  // the file as it settled
    int writes = 0;        // how many different states it went through first
    int64_t settled_after_ms = 0;
  };
  // Looks at the file (now_ms: a monotonic clock). A change is returned
  // once, when it has been stable for settle_ms; nullopt otherwise.
  std::optional<Change> look(int64_t now_ms);
  // True between the first look at a change and its hand-over.
  bool settling() const { return candidate_.has_value(); }
  // Looks that found the file different from the last one while settling.
  int writes_seen() const { return writes_; }
  // The file as it is now is the one in use (after a reload by USR2).
  void remember_current();
  // The contents last handed over, or in use.
  const std::string& handled() const { return handled_; }

 private:
  FileLook read_now(bool with_contents) const;

  std::string path_;
  int64_t settle_ms_;
  FileLook last_;        // the last look's stat (and contents when read)
  std::string handled_;  // contents in use or last handed over
  std::optional<FileLook> candidate_;
  int64_t candidate_since_ms_ = 0;  // when the candidate was last seen to change
  int64_t first_change_ms_ = 0;     // when this burst of changes began
  int writes_ = 0;
};

// Why a file that changed while dq ran must not be taken by the automatic
// reload although it parses: it is empty, or it is the running file cut
// short (a save in progress, a disk that filled up). "" when neither.
std::string incomplete_config_reason(const std::string& running, const std::string& next);

}  // namespace dq
