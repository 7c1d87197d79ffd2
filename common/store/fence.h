// The fence of a shard while the shard list changes (common/store/placement.h):
// the names of the shards that now place ids this shard was the home of,
// each with when it was last named ({dq}:fence, a zset scored by Redis's
// ms). add.lua refuses an id whose next home was named within kFenceMs:
// a host that has not seen the change yet then cannot place it here. An
// entry is named again by every add that looks here for the id and by the
// checker's mover on each pass, so it lasts as long as the change, and
// ends on its own kFenceMs after (the mover also clears it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dq {

// Longer than hosts see a change apart (~1.5 s) by far, shorter than the
// gap before a later change would want the same name unfenced.
constexpr int64_t kFenceMs = 30000;

// Names `homes` in the fence, at Redis's now.
std::vector<std::string> fence_argv(const std::vector<std::string>& homes);

// The record of job_key (as record_read_argv), asked of an id's previous
// home by an add that places it on `home`, which it names in the fence
// first: from then on the shard refuses the id from a host that still
// places it there.
std::vector<std::string> fenced_record_read_argv(std::string_view job_key, const std::string& home);

}  // namespace dq
