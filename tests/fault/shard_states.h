// Fault scenarios of a shard that answers but refuses writes (full,
// read-only) or comes back without its data (see scenarios.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tests/fault/load.h"
#include "tests/fault/tally.h"

namespace dq::test {

struct World;

// Each refusing scenario CHECKs that the checker calls the shard down for
// refusing writes meanwhile.
// The first shard is full (maxmemory 1, noeviction) for 3/5 of the load.
void fill_first_shard_for_a_while(World& world, int load_ms);
// The first shard turns into a read-only replica (of a spare that took its
// data first, writes paused meanwhile, so nothing is lost) for 3/5 of the
// load, then primary again.
void first_shard_read_only_for_a_while(World& world, int load_ms);
// kill -9 of the first shard, restarted at once with an empty data dir.
void restart_first_shard_empty(World& world, int load_ms);
using ScenarioCheck =
    std::function<void(World& world, const std::vector<AcceptedJob>& accepted, TallyRow& row)>;
// No add answered 500; the row notes the checker's down verdicts naming
// Redis's word for the refusal ("OOM", "replica") and the 503 answers.
ScenarioCheck refusal_seen(const std::string& redis_word);
// The checker noticed the loss once, with the jobs it had counted on the
// shard (jobs added in its last interval before the loss are not counted).
void data_loss_reported(World& world, const std::vector<AcceptedJob>& accepted, TallyRow& row);

}  // namespace dq::test
