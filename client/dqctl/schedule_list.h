// How `dqctl schedule list` prints a topic's schedules, from their JSON
// objects (schedule_to_json with next_runs: the registry's locally, the
// server's answer with --url), so both print the same.
#pragma once

#include <string>
#include <vector>

#include "client/dqctl/command.h"

namespace dq::ctl {

// {"topic", "schedules": [...]} with --json, else a table; returns kExitOk.
int print_schedule_list(const CtlOptions& options, const std::string& topic,
                        std::vector<Json> schedules);

}  // namespace dq::ctl
