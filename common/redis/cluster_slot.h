// Redis Cluster routing helpers: a key's hash slot (CRC16 of its hash tag mod
// 16384, as CLUSTER KEYSLOT computes it), MOVED/ASK error parsing, the owner
// of a slot in a CLUSTER SLOTS reply, and the retagging of dq's commands from
// the "{dq}" tag to a virtual shard's own tag (docs/decisions.md, "Redis
// Cluster: virtual shards").
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dq {

constexpr int kClusterSlots = 16384;

uint16_t crc16_xmodem(std::string_view data);
// The slot of a key: only its first non-empty {tag} counts when it has one.
int key_slot(std::string_view key);

struct ClusterRedirect {
  bool ask = false;  // ASK (once, after ASKING) rather than MOVED (for good)
  int slot = 0;
  std::string host;
  int port = 0;
};
// "MOVED 3999 127.0.0.1:6381" or "ASK ..."; nullopt for any other error.
std::optional<ClusterRedirect> parse_redirect(std::string_view error);
// TRYAGAIN (keys of a script split by a slot migration) or CLUSTERDOWN: not
// run, try again shortly.
bool is_cluster_retry(std::string_view error);

struct ClusterNode {
  std::string host;
  int port = 0;
};
// The primary serving `slot` in a CLUSTER SLOTS reply; nullopt when no range
// holds it. `all` (optional) gets every node the reply names.
std::optional<ClusterNode> slot_owner(const redisReply* slots_reply, int slot,
                                      std::vector<ClusterNode>* all = nullptr);

// The key prefix every dq key starts with outside a cluster.
inline constexpr std::string_view kDefaultTag = "{dq}";
// argv with its keys moved from "{dq}" to `tag` ("{dq:3}"): for FCALL, EVAL
// and EVALSHA its KEYS (scripts derive the rest from KEYS[1], see the prelude),
// for any other command each argument that starts with "{dq}:" (keys and SCAN
// patterns; dq sends no plain command whose value starts so).
std::vector<std::string> retag_command(const std::vector<std::string>& argv, std::string_view tag);
// A SCAN reply's keys back from `tag` to "{dq}", in place, so callers see the
// names they would outside a cluster.
void untag_scan_reply(redisReply* reply, std::string_view tag);
bool is_scan(const std::vector<std::string>& argv);

}  // namespace dq
