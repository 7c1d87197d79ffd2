// Implements the locked pid file.
#include "master/pid_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace dq {
namespace {

std::string read_small_file(int fd) {
  char buffer[64];
  ssize_t got = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (got <= 0) {
    return "";
  }
  std::string text(buffer, static_cast<size_t>(got));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

}  // namespace

Result<std::unique_ptr<PidFile>> PidFile::acquire(const std::string& path) {
  std::error_code error;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, error);
  }
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status(Code::kUnavailable, "cannot open pid file " + path + ": " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int saved = errno;
    std::string holder = read_small_file(fd);
    close(fd);
    if (saved == EWOULDBLOCK) {
      return Status(Code::kConflict, "another master is running (pid " +
                                         (holder.empty() ? "?" : holder) + ", pid file " + path +
                                         ")");
    }
    return Status(Code::kUnavailable, "cannot lock pid file " + path + ": " + std::strerror(saved));
  }
  return std::unique_ptr<PidFile>(new PidFile(path, fd));
}

Status PidFile::write_pid() {
  std::string text = std::to_string(getpid()) + "\n";
  if (ftruncate(fd_, 0) != 0 ||
      pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return Status(Code::kUnavailable,
                  "cannot write pid file " + path_ + ": " + std::strerror(errno));
  }
  written_by_ = getpid();
  return Status::ok();
}

void PidFile::close_in_child() {
  if (fd_ >= 0) {
    close(fd_);
  }
  fd_ = -1;
  written_by_ = -1;
}

void PidFile::give_up() {
  if (fd_ >= 0) {
    unlink(path_.c_str());
    close(fd_);
  }
  fd_ = -1;
  written_by_ = -1;
}

PidFile::~PidFile() {
  if (fd_ < 0) {
    return;
  }
  // Unlink while still holding the lock, so a new master never sees our pid.
  if (written_by_ == getpid()) {
    unlink(path_.c_str());
  }
  close(fd_);
}

}  // namespace dq
