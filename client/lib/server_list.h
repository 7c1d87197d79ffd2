// ServerList: the client's servers in the caller's order, with a back-off
// per server. A server that failed is skipped until its back-off ends (1 s
// doubling to 30 s by default), then tried again; it is never removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dq::client {

class ServerList {
 public:
  ServerList(std::vector<std::string> servers, int first_backoff_ms, int max_backoff_ms);

  size_t size() const { return servers_.size(); }
  const std::string& address(size_t index) const { return servers_[index].address; }

  // The order to try for one call: servers that are up (or whose back-off
  // is over) in list order, then the ones still backing off, soonest first,
  // so a call never gives up without trying every server.
  std::vector<size_t> attempt_order(int64_t now_ms) const;

  void mark_down(size_t index, int64_t now_ms);  // doubles the back-off on each failure in a row
  void mark_up(size_t index);

  bool is_down(size_t index, int64_t now_ms) const { return servers_[index].retry_at_ms > now_ms; }
  int64_t retry_at_ms(size_t index) const { return servers_[index].retry_at_ms; }

 private:
  struct Server {
    std::string address;
    int64_t retry_at_ms = 0;  // skipped until then
    int64_t backoff_ms = 0;   // 0: not failing
  };
  std::vector<Server> servers_;
  int64_t first_backoff_ms_;
  int64_t max_backoff_ms_;
};

}  // namespace dq::client
