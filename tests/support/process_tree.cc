#include "tests/support/process_tree.h"

#include <dirent.h>

#include <cstdlib>
#include <sstream>

#include "tests/support/text_files.h"

namespace dq::test {

std::vector<pid_t> children_titled(pid_t parent, const std::string& title_prefix) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    return found;
  }
  while (dirent* entry = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) {
      continue;
    }
    std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) {
      continue;
    }
    std::istringstream rest(stat.substr(close_paren + 2));
    char state = '?';
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent || state == 'Z') {
      continue;
    }
    std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.rfind(title_prefix, 0) == 0) {
      found.push_back(pid);
    }
  }
  closedir(proc);
  return found;
}

}  // namespace dq::test
