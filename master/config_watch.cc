// Implements ConfigWatch.
#include "master/config_watch.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace dq {

ConfigWatch::ConfigWatch(std::string path, int64_t settle_ms)
    : path_(std::move(path)), settle_ms_(settle_ms) {
  remember_current();
}

FileLook ConfigWatch::read_now(bool with_contents) const {
  FileLook look;
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0) {
    return look;  // being replaced; look again later
  }
  look.exists = true;
  look.mtime_ns = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
  look.size = info.st_size;
  look.inode = info.st_ino;
  if (with_contents) {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    look.contents = text.str();
  }
  return look;
}

std::optional<ConfigWatch::Change> ConfigWatch::look(int64_t now_ms) {
  FileLook now = read_now(false);
  if (!now.exists) {
    if (candidate_) {
      candidate_since_ms_ = now_ms;  // gone for a moment: still changing
    }
    last_ = now;
    return std::nullopt;
  }
  if (now.same_stat(last_) && !candidate_) {
    return std::nullopt;
  }
  now = read_now(true);
  last_ = now;
  if (now.contents == handled_) {
    candidate_.reset();  // touched, or back to what runs
    writes_ = 0;
    return std::nullopt;
  }
  if (!candidate_) {
    candidate_ = now;
    candidate_since_ms_ = first_change_ms_ = now_ms;
    writes_ = 1;
    return std::nullopt;
  }
  if (!now.same_stat(*candidate_) || now.contents != candidate_->contents) {
    candidate_ = now;  // written again since the last look
    candidate_since_ms_ = now_ms;
    ++writes_;
    return std::nullopt;
  }
  if (now_ms - candidate_since_ms_ < settle_ms_) {
    return std::nullopt;
  }
  Change change{candidate_->contents, writes_, now_ms - first_change_ms_};
  handled_ = candidate_->contents;
  candidate_.reset();
  writes_ = 0;
  return change;
}

void ConfigWatch::remember_current() {
  last_ = read_now(true);
  handled_ = last_.contents;
  candidate_.reset();
  writes_ = 0;
}

std::string incomplete_config_reason(const std::string& running, const std::string& next) {
  if (next.find_first_not_of(" \t\r\n") == std::string::npos) {
    return "the config file is empty";
  }
  if (next.size() < running.size() && running.compare(0, next.size(), next) == 0) {
    return "the config file is the running one cut short (its first " +
           std::to_string(next.size()) + " of " + std::to_string(running.size()) +
           " bytes: a save still in progress, or a full disk?)";
  }
  return "";
}

}  // namespace dq
