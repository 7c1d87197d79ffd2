// The master keeps a read-only descriptor on the registry file (dq.db) for
// as long as it runs with it. Deleted under a running dqd, the file then
// stays readable through /proc/<master>/fd/N whatever the children do (they
// open it lazily, and a child respawned after the deletion holds nothing),
// so the copy dqctl prints (client/dqctl/registry_beside_dqd.cc) always
// names a descriptor that exists.
#pragma once

#include <string>

namespace dq {

class RegistryFileHold {
 public:
  RegistryFileHold() = default;
  RegistryFileHold(const RegistryFileHold&) = delete;
  RegistryFileHold& operator=(const RegistryFileHold&) = delete;
  ~RegistryFileHold();

  // Holds `path` (again when it differs from the one held); a file that
  // cannot be opened is not held, and the next call tries again.
  void hold(const std::string& path);

 private:
  void release();

  std::string path_;
  int fd_ = -1;
};

}  // namespace dq
