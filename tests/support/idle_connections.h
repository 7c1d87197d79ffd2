// IdleConnections: many TCP connections to one port that send nothing, as a
// hostile or broken client keeps them open; and what a test reads about the
// process that holds them (its descriptors and CPU time, from /proc).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace dq::test {

class IdleConnections {
 public:
  IdleConnections() = default;
  ~IdleConnections();  // closes every connection still held
  IdleConnections(const IdleConnections&) = delete;
  IdleConnections& operator=(const IdleConnections&) = delete;

  // Raises this process's RLIMIT_NOFILE (soft and, as root, hard) to at least
  // `descriptors`; returns the soft limit it got.
  static size_t allow_descriptors(size_t descriptors);

  // Opens `count` more connections to 127.0.0.1:port, many connects in
  // flight, sending `first_bytes` on each as soon as it is connected; gives
  // up when no connect succeeded for timeout_ms. Returns how many opened.
  size_t open(int port, size_t count, int timeout_ms = 30000, const std::string& first_bytes = "");
  // How many of them the server has closed (EOF or reset seen).
  size_t closed_by_server() const;
  // Closes the first `count` still held (in the order they were opened).
  void close_first(size_t count);
  size_t held() const { return fds_.size(); }

 private:
  std::vector<int> fds_;
  size_t sources_ = 0;  // connects started, for the source address
};

// The start of an HTTP request head, never finished: a connection that sent
// it has a request in progress (not idle) until request_timeout_ms.
constexpr const char* kUnfinishedHttpHead = "POST /v1/topics/t/jobs HTTP/1.1\r\nHost: x\r\n";

// IdleFlood: `count` idle connections to 127.0.0.1:port held by forked
// helper processes (at most `per_process` each), so that a test can hold more
// than its own open files limit allows. The helpers start opening when it is
// constructed; opened() waits until they are done.
class IdleFlood {
 public:
  IdleFlood(int port, size_t count, size_t per_process = 10000);
  ~IdleFlood();  // the helpers close everything and exit
  IdleFlood(const IdleFlood&) = delete;
  IdleFlood& operator=(const IdleFlood&) = delete;

  size_t opened();
  // How many of them the server has closed (asks every helper).
  size_t closed_by_server();

 private:
  struct Helper {
    pid_t pid = -1;
    int ask = -1;     // to the helper: 'c' count closed, 'q' quit
    int answer = -1;  // from it: one size_t per question (first: how many opened)
    size_t opened = 0;
  };
  std::vector<Helper> helpers_;
  bool counted_ = false;  // every helper said how many it opened
};

// Descriptors the process holds (entries of /proc/PID/fd).
size_t descriptors_of(pid_t pid);
// CPU seconds (user + system) the process used so far (/proc/PID/stat).
double cpu_seconds_of(pid_t pid);

}  // namespace dq::test
