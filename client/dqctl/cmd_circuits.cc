// `dqctl circuits`: each receiver's circuit breaker (docs/delivery.md,
// "Circuit breaking"), read from the Redis shards that hold them:
//   circuits          a table: receiver, state, failures in a row, since,
//                     next probe, last error
//   --json circuits   {"circuits": [...], "unreachable_shards": [...]}
#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/store/circuit_listing.h"
#include "common/store/waiting_shards.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace circuits_command {

constexpr const char* kCommand = "circuits";
constexpr const char* kUsage =
    "circuits   each receiver's circuit breaker: closed, open or half_open, since when, last "
    "error";

int run_circuits(const CtlOptions& options, const std::vector<std::string>& args) {
  Config config;
  int exit_code = kExitOk;
  if (!load_config_without_args(kCommand, options, args, &config, &exit_code)) {
    return exit_code;
  }
  WaitingShards shards(config);
  CircuitListing listing = shards.wait<CircuitListing>(
      [&](std::function<void(CircuitListing)> done) { list_circuits(shards.set(), done); });
  if (options.json) {
    Json list = Json::array();
    for (const auto& entry : listing.circuits) {
      list.push_back(circuit_to_json(entry));
    }
    print_json(Json{{"circuits", list}, {"unreachable_shards", listing.unreachable_shards}});
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"RECEIVER", "STATE", "FAILURES", "SINCE", "NEXT PROBE", "LAST ERROR"}};
    for (const auto& entry : listing.circuits) {
      const Circuit& c = entry.circuit;
      bool open = c.phase == CircuitPhase::kOpen;
      rows.push_back({entry.receiver, phase_name(c.phase), std::to_string(c.failures),
                      c.since_ms > 0 ? format_time(c.since_ms) : "-",
                      open ? format_time(c.probe_at_ms) : "-",
                      c.last_error.empty() ? "-" : c.last_error.substr(0, 80)});
    }
    print_rows(rows);
  }
  for (const auto& name : listing.unreachable_shards) {
    fprintf(stderr, "dqctl: warning: Redis shard %s not reached: its receivers are left out\n",
            name.c_str());
  }
  return listing.unreachable_shards.empty() ? kExitOk : kExitUnavailable;
}

const CommandRegistration kRegistered(kCommand, kUsage, &run_circuits);

}  // namespace circuits_command
}  // namespace dq::ctl
