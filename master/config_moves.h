// What a new config would move that dq does not change on its own: the
// registry (its SQLite file), a listener, or every shard at once. A config
// file that loses its keys (cut short while being saved, emptied) falls back
// to defaults that do exactly that: a new empty registry beside the config,
// the API on 127.0.0.1:6780, the jobs on a local Redis. The automatic reload
// refuses such a change and says what it is; SIGUSR2 applies it.
#pragma once

#include <string>
#include <vector>

#include "common/core/config.h"

namespace dq {

// One line per move, "the registry path changed from X to Y",
// "[server] listen changed from A to B", ...; empty when nothing moves.
// Both configs with the registry's shards merged in.
std::vector<std::string> config_moves(const Config& running, const Config& next);

}  // namespace dq
