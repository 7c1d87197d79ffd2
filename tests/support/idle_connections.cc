// IdleConnections (see idle_connections.h).
#include "tests/support/idle_connections.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

namespace dq::test {

IdleConnections::~IdleConnections() { close_first(fds_.size()); }

size_t IdleConnections::allow_descriptors(size_t descriptors) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < descriptors) {
    rlimit raised = limit;
    raised.rlim_cur = descriptors;
    raised.rlim_max = std::max<rlim_t>(limit.rlim_max, descriptors);
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      raised.rlim_cur = limit.rlim_max;  // not root: as far as the hard limit goes
      raised.rlim_max = limit.rlim_max;
      setrlimit(RLIMIT_NOFILE, &raised);
    }
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return static_cast<size_t>(limit.rlim_cur);
}

size_t IdleConnections::open(int port, size_t count, int timeout_ms,
                             const std::string& first_bytes) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  // Many connects in flight at once: a SYN the server's full accept queue
  // dropped is sent again after 1 s, and those waits overlap instead of
  // adding up. A connect that fails or takes over timeout_ms is tried again,
  // until count are open or no connect succeeded for timeout_ms.
  constexpr size_t kInFlight = 256;
  struct Pending {
    int fd;
    int64_t started_ms;
  };
  std::vector<Pending> pending;
  size_t opened = 0;
  auto now_ms = [] {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
  };
  int64_t last_success_ms = now_ms();
  while (opened < count && now_ms() - last_success_ms < timeout_ms) {
    while (opened + pending.size() < count && pending.size() < kInFlight) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) {
        break;  // out of descriptors
      }
      // At most 2,000 connections per source address (127.0.0.2, .3, ...):
      // with tens of thousands from one address to one port, the kernel's
      // search for a free local port makes every connect() slow.
      sockaddr_in source{};
      source.sin_family = AF_INET;
      source.sin_addr.s_addr =
          htonl(0x7f000002u + static_cast<uint32_t>((sources_++ / 2000) % 200));
      int on = 1;
      setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);  // port at connect()
      bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source);
      if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 &&
          errno != EINPROGRESS) {
        close(fd);
        break;
      }
      pending.push_back({fd, now_ms()});
    }
    if (pending.empty()) {
      break;
    }
    std::vector<pollfd> polls;
    for (const auto& entry : pending) {
      polls.push_back(pollfd{entry.fd, POLLOUT, 0});
    }
    poll(polls.data(), polls.size(), 50);
    std::vector<Pending> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      int fd = pending[i].fd;
      if (polls[i].revents == 0) {
        if (now_ms() - pending[i].started_ms < timeout_ms) {
          still.push_back(pending[i]);
        } else {
          close(fd);  // tried again on the next round
        }
        continue;
      }
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        close(fd);
        continue;
      }
      if (!first_bytes.empty()) {
        send(fd, first_bytes.data(), first_bytes.size(), MSG_NOSIGNAL);
      }
      fds_.push_back(fd);
      ++opened;
      last_success_ms = now_ms();
    }
    pending = std::move(still);
  }
  for (const auto& entry : pending) {
    close(entry.fd);
  }
  return opened;
}

size_t IdleConnections::closed_by_server() const {
  std::vector<pollfd> polls;
  for (int fd : fds_) {
    polls.push_back(pollfd{fd, POLLIN | POLLRDHUP, 0});
  }
  poll(polls.data(), polls.size(), 0);
  size_t closed = 0;
  for (const auto& entry : polls) {
    if (entry.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
      ++closed;
      continue;
    }
    if (entry.revents & POLLIN) {
      char byte;
      if (recv(entry.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) {
        ++closed;
      }
    }
  }
  return closed;
}

void IdleConnections::close_first(size_t count) {
  count = std::min(count, fds_.size());
  for (size_t i = 0; i < count; ++i) {
    close(fds_[i]);
  }
  fds_.erase(fds_.begin(), fds_.begin() + static_cast<std::ptrdiff_t>(count));
}

namespace {

bool read_size(int fd, size_t* value) {
  return read(fd, value, sizeof *value) == static_cast<ssize_t>(sizeof *value);
}

// The helper's life: open, say how many, answer questions until told to quit.
[[noreturn]] void run_helper(int port, size_t count, int ask, int answer) {
  IdleConnections idle;
  size_t opened = idle.open(port, count);
  (void)!write(answer, &opened, sizeof opened);
  char question = 0;
  while (read(ask, &question, 1) == 1 && question == 'c') {
    size_t closed = idle.closed_by_server();
    (void)!write(answer, &closed, sizeof closed);
  }
  _exit(0);  // the kernel closes the connections
}

}  // namespace

IdleFlood::IdleFlood(int port, size_t count, size_t per_process) {
  for (size_t left = count; left > 0;) {
    size_t part = std::min(left, per_process);
    left -= part;
    int ask[2];
    int answer[2];
    if (pipe2(ask, O_CLOEXEC) != 0 || pipe2(answer, O_CLOEXEC) != 0) {
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(ask[1]);
      close(answer[0]);
      run_helper(port, part, ask[0], answer[1]);
    }
    close(ask[0]);
    close(answer[1]);
    helpers_.push_back(Helper{pid, ask[1], answer[0], 0});
  }
}

IdleFlood::~IdleFlood() {
  for (auto& helper : helpers_) {
    (void)!write(helper.ask, "q", 1);
    close(helper.ask);
    close(helper.answer);
    int status = 0;
    waitpid(helper.pid, &status, 0);
  }
}

size_t IdleFlood::opened() {
  size_t opened = 0;
  for (auto& helper : helpers_) {
    if (!counted_) {
      read_size(helper.answer, &helper.opened);  // they open at the same time
    }
    opened += helper.opened;
  }
  counted_ = true;
  return opened;
}

size_t IdleFlood::closed_by_server() {
  opened();
  size_t closed = 0;
  for (auto& helper : helpers_) {
    size_t part = 0;
    if (write(helper.ask, "c", 1) == 1 && read_size(helper.answer, &part)) {
      closed += part;
    }
  }
  return closed;
}

size_t descriptors_of(pid_t pid) {
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) {
    return 0;
  }
  size_t count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') {
      ++count;
    }
  }
  closedir(dir);
  return count;
}

double cpu_seconds_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) {
    return 0;
  }
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) {
      ticks += std::stod(field);  // utime, stime
    }
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace dq::test
