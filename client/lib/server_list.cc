// ServerList: failover order and back-off of a client's servers.
#include "server_list.h"

#include <algorithm>

namespace dq::client {

ServerList::ServerList(std::vector<std::string> servers, int first_backoff_ms, int max_backoff_ms)
    : first_backoff_ms_(std::max(1, first_backoff_ms)),
      max_backoff_ms_(std::max(first_backoff_ms_, static_cast<int64_t>(max_backoff_ms))) {
  for (auto& address : servers) {
    servers_.push_back(Server{std::move(address), 0, 0});
  }
}

std::vector<size_t> ServerList::attempt_order(int64_t now_ms) const {
  std::vector<size_t> ready;
  std::vector<size_t> backing_off;
  for (size_t i = 0; i < servers_.size(); ++i) {
    (is_down(i, now_ms) ? backing_off : ready).push_back(i);
  }
  std::stable_sort(backing_off.begin(), backing_off.end(), [this](size_t a, size_t b) {
    return servers_[a].retry_at_ms < servers_[b].retry_at_ms;
  });
  ready.insert(ready.end(), backing_off.begin(), backing_off.end());
  return ready;
}

void ServerList::mark_down(size_t index, int64_t now_ms) {
  Server& server = servers_[index];
  server.backoff_ms =
      server.backoff_ms == 0 ? first_backoff_ms_ : std::min(server.backoff_ms * 2, max_backoff_ms_);
  server.retry_at_ms = now_ms + server.backoff_ms;
}

void ServerList::mark_up(size_t index) {
  servers_[index].backoff_ms = 0;
  servers_[index].retry_at_ms = 0;
}

}  // namespace dq::client
