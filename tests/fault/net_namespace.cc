// NetNamespace (see net_namespace.h): ip(8) and tc(8) through /bin/sh.
#include "tests/fault/net_namespace.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "tests/support/dqd_process.h"

namespace dq::test {
namespace {

bool run_sh(const std::string& command, std::string* output) {
  std::string ignored;
  return run_command({"/bin/sh", "-c", command + " 2>&1"}, output ? output : &ignored) == 0;
}

constexpr const char* kNamePrefix = "dqfault";

// A suite killed before its destructors ran (a crash, ctest's timeout)
// leaves its namespace and veth pair behind, and the veth keeps an address
// that a later suite's pid may map to: delete those whose process is gone.
void remove_namespaces_of_dead_suites() {
  std::string list;
  if (!run_sh("ip netns list", &list)) {
    return;
  }
  std::istringstream lines(list);
  std::string line;
  while (std::getline(lines, line)) {
    std::string name = line.substr(0, line.find(' '));  // "dqfault123 (id: 3)"
    if (name.rfind(kNamePrefix, 0) != 0) {
      continue;
    }
    std::string pid = name.substr(std::string(kNamePrefix).size());
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    if (kill(std::stoi(pid), 0) == 0 || errno == EPERM) {
      continue;  // its suite is still running (or the pid was reused: keep it)
    }
    std::string command = "ip link del dqf";
    command.append(pid).append("o; ip netns del ").append(name);
    run_sh(command, nullptr);
  }
}

}  // namespace

bool NetNamespace::sh(const std::string& command, std::string* output) const {
  return run_sh(command, output);
}

std::unique_ptr<NetNamespace> NetNamespace::create(std::string* why_not) {
  if (geteuid() != 0) {
    *why_not = "not root: cannot create a network namespace";
    return nullptr;
  }
  remove_namespaces_of_dead_suites();
  std::unique_ptr<NetNamespace> ns(new NetNamespace());
  std::string id = std::to_string(getpid());
  std::string subnet = "10.213." + std::to_string(20 + getpid() % 200) + ".";
  ns->name_ = kNamePrefix + id;
  ns->outside_veth_ = "dqf" + id + "o";
  ns->inside_veth_ = "dqf" + id + "i";
  ns->outside_ip_ = subnet + "1";
  ns->inside_ip_ = subnet + "2";
  std::string in = "ip netns exec " + ns->name_ + " ";
  std::string output;
  if (!ns->sh("ip netns add " + ns->name_, &output)) {
    *why_not = "ip netns add failed: " + output;
    ns->name_.clear();  // nothing to delete
    return nullptr;
  }
  bool made =
      ns->sh("ip link add " + ns->outside_veth_ + " type veth peer name " + ns->inside_veth_ +
                 " && ip link set " + ns->inside_veth_ + " netns " + ns->name_ +
                 " && ip addr add " + ns->outside_ip_ + "/24 dev " + ns->outside_veth_ +
                 " && ip link set " + ns->outside_veth_ + " up && " + in + "ip addr add " +
                 ns->inside_ip_ + "/24 dev " + ns->inside_veth_ + " && " + in + "ip link set " +
                 ns->inside_veth_ + " up && " + in + "ip link set lo up",
             &output);
  if (!made) {
    *why_not = "veth pair not set up: " + output;
    return nullptr;  // the destructor deletes the namespace
  }
  return ns;
}

NetNamespace::~NetNamespace() {
  if (name_.empty()) {
    return;
  }
  sh("ip link del " + outside_veth_);  // gone already when the peer went with the namespace
  sh("ip netns del " + name_);
}

std::vector<std::string> NetNamespace::exec_prefix() const {
  return {"ip", "netns", "exec", name_};
}

void NetNamespace::cut() {
  sh("ip netns exec " + name_ + " ip link set " + inside_veth_ + " down");
}

void NetNamespace::restore() {
  sh("ip netns exec " + name_ + " ip link set " + inside_veth_ + " up");
}

bool NetNamespace::netem(int port, int delay_ms, bool stalled, std::string* error) {
  // Each end: a prio qdisc whose third band delays; u32 filters send the
  // shard's packets there (Redis -> dqd leaves the outside end with sport =
  // port, dqd -> Redis leaves the inside end with dport = port).
  std::string netem =
      "netem delay " + std::to_string(delay_ms) + "ms" + (stalled ? " loss 100%" : "");
  std::string in = "ip netns exec " + name_ + " ";
  std::string p = std::to_string(port);
  std::string command;
  if (!netem_added_) {
    std::ostringstream both;
    const char* separator = "";
    for (auto [prefix, dev, match] :
         {std::tuple<std::string, std::string, std::string>{"", outside_veth_, "sport"},
          {in, inside_veth_, "dport"}}) {
      both << separator << prefix << "tc qdisc add dev " << dev << " root handle 1: prio && "
           << prefix << "tc qdisc add dev " << dev << " parent 1:3 handle 30: " << netem << " && "
           << prefix << "tc filter add dev " << dev << " parent 1:0 protocol ip u32 match ip "
           << match << " " << p << " 0xffff flowid 1:3";
      separator = " && ";
    }
    command = both.str();
  } else {
    command = "tc qdisc change dev " + outside_veth_ + " parent 1:3 handle 30: " + netem + " && " +
              in + "tc qdisc change dev " + inside_veth_ + " parent 1:3 handle 30: " + netem;
  }
  if (!sh(command, error)) {
    return false;
  }
  netem_added_ = true;
  return true;
}

bool netem_available() {
  return run_sh(
      "unshare -n sh -c 'tc qdisc add dev lo root handle 1: prio && "
      "tc qdisc add dev lo parent 1:3 handle 30: netem delay 1ms'",
      nullptr);
}

}  // namespace dq::test
