// NetNamespace: a network namespace for one fault scenario (root only),
// joined to this one by a veth pair: outside 10.213.S.1/24, inside
// 10.213.S.2/24 (S from this process's pid, so two suites on one machine
// do not meet; create() first removes those left by a suite that died). A
// dqd run in it with exec_prefix() reaches Redis and the callback server on
// outside_ip() and answers on inside_ip(); cut() takes the inside end down
// (a partition), restore() brings it back.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace dq::test {

class NetNamespace {
 public:
  // Null, with *why_not set, when it cannot be made (not root, no ip(8)).
  static std::unique_ptr<NetNamespace> create(std::string* why_not);
  ~NetNamespace();  // deletes the namespace (and with it the veth pair)
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  const std::string& outside_ip() const { return outside_ip_; }
  const std::string& inside_ip() const { return inside_ip_; }
  std::vector<std::string> exec_prefix() const;  // {"ip", "netns", "exec", NAME}

  void cut();
  void restore();

  // netem on the veth pair for traffic to and from `port` on outside_ip()
  // only: `delay_ms` each way, and with `stalled` every such packet dropped.
  // False (with *error) when the kernel has no sch_netem.
  bool netem(int port, int delay_ms, bool stalled, std::string* error);

 private:
  NetNamespace() = default;
  bool sh(const std::string& command, std::string* output = nullptr) const;

  std::string name_;
  std::string outside_veth_;
  std::string inside_veth_;
  std::string outside_ip_;
  std::string inside_ip_;
  bool netem_added_ = false;
};

// Whether this kernel has sch_netem and sch_prio, which netem() needs
// (tried in a throwaway namespace).
bool netem_available();

}  // namespace dq::test
