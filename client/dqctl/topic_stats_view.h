// `dqctl topic stats [NAME]`: the counts of common/store/topic_stats.h as a table
// (or --json), for one registered topic or for every topic.
#pragma once

#include <string>
#include <vector>

#include "client/dqctl/command.h"

namespace dq::ctl {

// args: {"stats"} or {"stats", NAME}. Unknown NAME: exit 1.
int run_topic_stats(const CtlOptions& options, const std::vector<std::string>& args);

}  // namespace dq::ctl
