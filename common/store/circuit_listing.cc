// Implements common/store/circuit_listing.h.
#include "common/store/circuit_listing.h"

#include <algorithm>
#include <memory>

#include "common/store/circuit_store.h"
#include "common/store/lua_scripts.h"

namespace dq {

void list_circuits(const ShardSet& shards, std::function<void(CircuitListing)> done) {
  int64_t deadline = deadline_after(shards.timeout_ms);
  // A copy: the caller's set may be gone before the shards answer.
  auto set = std::make_shared<const ShardSet>(shards);
  fan_out<std::vector<ReceiverCircuit>>(
      shards.size(),
      [set, deadline](size_t index,
                      std::function<void(Result<std::vector<ReceiverCircuit>>)> answer) {
        ScriptCall call{&kCircuitListScript, {keys::circuits()}, {keys::circuit("")}};
        ask(
            *set, index, std::move(call), deadline,
            [answer](Result<const redisReply*> reply) {
              if (!reply.is_ok()) {
                return answer(reply.status());
              }
              std::vector<ReceiverCircuit> found;
              const redisReply* list = *reply;
              if (list->type == REDIS_REPLY_ARRAY) {
                for (size_t i = 0; i + 1 < list->elements; i += 2) {
                  const redisReply* name = list->element[i];
                  if (name->type != REDIS_REPLY_STRING) {
                    continue;
                  }
                  found.push_back({std::string(name->str, name->len),
                                   circuit_from_reply(list->element[i + 1], 0)});
                }
              }
              answer(std::move(found));
            },
            Code::kUnavailable);
      },
      [set, done = std::move(done)](std::vector<Result<std::vector<ReceiverCircuit>>> parts) {
        CircuitListing listing;
        for (size_t i = 0; i < parts.size(); ++i) {
          if (!parts[i].is_ok()) {
            listing.unreachable_shards.push_back(set->names[i]);
            continue;
          }
          for (auto& entry : *parts[i]) {
            listing.circuits.push_back(std::move(entry));
          }
        }
        std::sort(listing.circuits.begin(), listing.circuits.end(),
                  [](const auto& a, const auto& b) { return a.receiver < b.receiver; });
        done(std::move(listing));
      });
}

Json circuit_to_json(const ReceiverCircuit& entry) {
  const Circuit& c = entry.circuit;
  return Json{{"receiver", entry.receiver},
              {"state", phase_name(c.phase)},
              {"failures", c.failures},
              {"since_ms", c.since_ms},
              {"opened_at_ms", c.opened_at_ms},
              {"open_ms", c.open_ms},
              {"probe_at_ms", c.probe_at_ms},
              {"allowed", c.allowed},
              {"last_error", c.last_error},
              {"last_error_ms", c.last_error_ms},
              {"kind", entry.receiver.find('/') != std::string::npos ? "endpoint" : "receiver"},
              {"paused_until_ms", c.paused_until_ms}};
}

}  // namespace dq
