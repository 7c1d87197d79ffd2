// Implements common/store/cap_state.h.
#include "common/store/cap_state.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "common/store/keys.h"
#include "common/store/lua_scripts.h"
#include "common/store/reply_values.h"

namespace dq {

void read_cap_state(const ShardSet& shards, size_t index, const std::string& topic,
                    std::function<void(CapState)> done) {
  if (index >= shards.size()) {
    return done(CapState{});
  }
  ScriptCall call{&kCapStateScript,
                  {keys::permit_leases(topic), keys::permit_deadlines(topic), keys::rate(topic)},
                  {}};
  ask(
      shards, index, std::move(call), deadline_after(shards.timeout_ms),
      [done](Result<const redisReply*> reply) {
        CapState state;
        if (!reply.is_ok()) {
          return done(state);
        }
        const redisReply* r = *reply;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
            !reply_int(r->element[0], &state.permits) ||
            r->element[1]->type != REDIS_REPLY_STRING ||
            !reply_int(r->element[2], &state.redis_now_ms)) {
          return done(state);
        }
        std::string arrival(r->element[1]->str, r->element[1]->len);
        state.arrival_ms = arrival.empty() ? 0 : std::strtod(arrival.c_str(), nullptr);
        state.known = true;
        done(state);
      },
      Code::kUnavailable);
}

// permit_lease.lua gives a share while the arrival time is at most burst-1
// intervals ahead of now.
int64_t rate_wait_ms(const CapState& state, int rate, int burst) {
  if (!state.known || rate <= 0) {
    return 0;
  }
  double interval = 1000.0 / rate;
  double wait = state.arrival_ms - (std::max(burst, 1) - 1) * interval -
                static_cast<double>(state.redis_now_ms);
  return wait > 0 ? static_cast<int64_t>(std::ceil(wait)) : 0;
}

}  // namespace dq
