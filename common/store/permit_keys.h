// The keys of a topic's caps (permit_lease.lua, docs/delivery.md "Caps per
// topic"), on its coordination shard (common/store/coordination_shard.h):
// each consumer's lease of permits (hash holder -> "count seq") and the
// leases' deadlines (zset holder -> deadline ms). The rate's GCRA arrival
// time is keys::rate (keys.h).
#pragma once

#include <string>
#include <string_view>

#include "common/store/keys.h"

namespace dq::keys {

inline std::string permit_leases(std::string_view topic) {
  return kPrefix + "permit_leases:" + std::string(topic);
}
inline std::string permit_deadlines(std::string_view topic) {
  return kPrefix + "permit_deadlines:" + std::string(topic);
}

}  // namespace dq::keys
