// DelayProxy: a TCP proxy for one Redis shard that makes it slow: every
// byte reaches the other side `delay_ms` late, in each direction, and it can
// be told to stall (hold every byte until told to go on). Used by the fault
// suite where the kernel has no sch_netem (tc ... netem: "Specified qdisc
// kind is unknown"), and by test_master for a shard slow to connect. Two
// threads per direction per connection: enough for the few connections of
// one dqd.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dq::test {

class DelayProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards each connection to
  // 127.0.0.1:upstream_port.
  DelayProxy(int upstream_port, int delay_ms);
  ~DelayProxy();  // closes every connection and joins every thread
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  int port() const { return port_; }
  std::string address() const;  // "127.0.0.1:<port>"
  void stall(bool on);
  void set_delay(int delay_ms) { delay_ms_ = delay_ms; }  // for bytes read from now on

 private:
  struct Direction;
  struct Connection;
  void accept_loop();

  int upstream_port_;
  std::atomic<int> delay_ms_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stalled_{false};
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> connections_;
};

}  // namespace dq::test
