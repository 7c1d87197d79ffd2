// Implements master/config_moves.h.
#include "master/config_moves.h"

#include <algorithm>

namespace dq {
namespace {

std::string address_or_off(const std::string& address) { return address.empty() ? "off" : address; }

std::string shard_names_text(const std::vector<ShardAddress>& shards) {
  std::string text;
  for (const auto& shard : shards) {
    text += (text.empty() ? "" : ",") + shard.name();
  }
  return text;
}

}  // namespace

std::vector<std::string> config_moves(const Config& running, const Config& next) {
  std::vector<std::string> moves;
  if (running.sqlite_path != next.sqlite_path) {
    moves.push_back("the registry path changed from " + running.sqlite_path + " to " +
                    next.sqlite_path);
  }
  const struct {
    const char* key;
    const std::string Config::*address;
  } listeners[] = {{"[server] listen", &Config::server_listen},
                   {"[server] legacy_listen", &Config::legacy_listen},
                   {"[admin] listen", &Config::admin_listen}};
  for (const auto& listener : listeners) {
    const std::string& before = running.*listener.address;
    const std::string& after = next.*listener.address;
    if (before != after) {
      moves.push_back(std::string(listener.key) + " changed from " + address_or_off(before) +
                      " to " + address_or_off(after));
    }
  }
  bool shard_kept = std::any_of(next.shards.begin(), next.shards.end(), [&](const auto& shard) {
    return std::any_of(running.shards.begin(), running.shards.end(),
                       [&](const auto& old) { return old.name() == shard.name(); });
  });
  if (!running.shards.empty() && !shard_kept) {
    moves.push_back("every shard changed, from " + shard_names_text(running.shards) + " to " +
                    shard_names_text(next.shards));
  }
  return moves;
}

}  // namespace dq
