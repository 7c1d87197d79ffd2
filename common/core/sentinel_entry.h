// Parsing of a Sentinel-managed shard entry in a shard list:
//   sentinel://master-name[:password]@host:port[,host:port...]
// The entry is ONE shard named "sentinel://master-name" (stable across
// failovers, so placement does not move); the host:port items are the
// sentinels to ask for its primary, and the password is the data nodes'
// (primary and replicas share it). Because shard lists are comma lists too,
// the sentinel list runs to the end of the list or to the next item that has
// a scheme ("redis://host:port" for a fixed shard after it, or another
// "sentinel://..." entry).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/core/shard.h"
#include "common/core/status.h"

namespace dq {

inline constexpr std::string_view kSentinelScheme = "sentinel://";
inline constexpr std::string_view kRedisScheme = "redis://";

bool is_sentinel_entry(const std::string& item);

// Parses the entry starting at items[*index] and the sentinel addresses after
// it; leaves *index on the entry's last item.
Result<ShardAddress> parse_sentinel_entry(const std::vector<std::string>& items, size_t* index);

}  // namespace dq
