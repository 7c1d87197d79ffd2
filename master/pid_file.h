// The master's pid file: created and locked with flock(LOCK_EX|LOCK_NB) for
// the master's whole life, so a second master on the same file refuses to
// start. The lock belongs to the open file, so it survives --daemon's forks.
#pragma once

#include <memory>
#include <string>

#include "common/core/status.h"

namespace dq {

class PidFile {
 public:
  // kConflict, with "another master is running (pid N, pid file P)", when
  // another process holds the lock.
  static Result<std::unique_ptr<PidFile>> acquire(const std::string& path);
  ~PidFile();  // removes the file if this process wrote it, then unlocks
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

  Status write_pid();  // this process's pid (call again after daemonizing)
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  void close_in_child();  // a forked child must not keep the lock
  // The start was refused after the lock was taken: removes the file (still
  // empty) while holding the lock.
  void give_up();

 private:
  PidFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
  int written_by_ = -1;  // pid in the file
};

}  // namespace dq
