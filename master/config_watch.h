// ConfigWatch: notices that the config file changed, so the master reloads
// on its own. Polled about once a second: stat() first (mtime, size, inode),
// and only a real change of the contents counts, so `touch` does not reload.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace dq {

class ConfigWatch {
 public:
  explicit ConfigWatch(std::string path);

  // True once per change of the file's contents since the last call (or
  // since remember_current()).
  bool changed();
  // The file as it is now is the one in use (after a reload by USR2).
  void remember_current();

 private:
  bool stat_differs();

  std::string path_;
  int64_t mtime_ns_ = -1;
  off_t size_ = -1;
  ino_t inode_ = 0;
  std::string contents_;
};

}  // namespace dq
