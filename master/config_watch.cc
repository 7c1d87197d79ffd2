// Implements ConfigWatch.
#include "master/config_watch.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace dq {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ConfigWatch::ConfigWatch(std::string path) : path_(std::move(path)) { remember_current(); }

bool ConfigWatch::stat_differs() {
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0) {
    return false;  // being replaced; look again later
  }
  int64_t mtime = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
  bool differs = mtime != mtime_ns_ || info.st_size != size_ || info.st_ino != inode_;
  mtime_ns_ = mtime;
  size_ = info.st_size;
  inode_ = info.st_ino;
  return differs;
}

bool ConfigWatch::changed() {
  if (!stat_differs()) {
    return false;
  }
  std::string now = read_file(path_);
  if (now == contents_) {
    return false;
  }
  contents_ = now;
  return true;
}

void ConfigWatch::remember_current() {
  stat_differs();
  contents_ = read_file(path_);
}

}  // namespace dq
