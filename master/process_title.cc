// Implements set_process_title by overwriting the argv/environ block.
#include "master/process_title.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace dq {
namespace {

char* g_title_start = nullptr;  // argv[0] as the kernel placed it
size_t g_title_room = 0;        // bytes of contiguous argv+environ after it

}  // namespace

void init_process_title(int argc, char** argv) {
  if (argc <= 0 || argv == nullptr || argv[0] == nullptr) {
    return;
  }
  char* end = argv[0] + std::strlen(argv[0]) + 1;
  for (int i = 1; i < argc; ++i) {
    if (argv[i] != end) {
      break;
    }
    end = argv[i] + std::strlen(argv[i]) + 1;
  }
  size_t env_count = 0;
  while (environ != nullptr && environ[env_count] != nullptr) {
    ++env_count;
  }
  for (size_t i = 0; i < env_count; ++i) {
    if (environ[i] != end) {
      break;
    }
    end = environ[i] + std::strlen(environ[i]) + 1;
  }
  // Move the environment and the argv strings out of the block we will reuse.
  auto** moved_env = static_cast<char**>(std::calloc(env_count + 1, sizeof(char*)));
  if (moved_env == nullptr) {
    return;
  }
  for (size_t i = 0; i < env_count; ++i) {
    moved_env[i] = strdup(environ[i]);
  }
  environ = moved_env;
  g_title_start = argv[0];
  for (int i = 0; i < argc; ++i) {
    argv[i] = strdup(argv[i]);
  }
  g_title_room = static_cast<size_t>(end - g_title_start);
}

void set_process_title(const std::string& title) {
  prctl(PR_SET_NAME, title.c_str(), 0, 0, 0);  // the kernel keeps 15 bytes
  if (g_title_start == nullptr || g_title_room < 2) {
    return;
  }
  size_t length = title.size() < g_title_room - 1 ? title.size() : g_title_room - 1;
  title.copy(g_title_start, length);
  // NULs over the rest of the block (at least one byte) end the title.
  std::memset(g_title_start + length, 0, g_title_room - length);
}

}  // namespace dq
