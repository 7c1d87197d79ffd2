#include "common/core/host_name.h"

#include <unistd.h>

namespace dq {

const std::string& host_name() {
  static const std::string name = [] {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    return std::string(host);
  }();
  return name;
}

}  // namespace dq
