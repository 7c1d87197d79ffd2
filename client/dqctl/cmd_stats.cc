// `dqctl stats [TOPIC] [--watch [SECONDS]]`: the numbers /metrics exports
// (common/store/topic_stats.h) as a table — `topic stats`, redrawn every SECONDS
// (default 2) with --watch until interrupted.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "client/dqctl/topic_stats_view.h"
#include "common/core/stop_flag.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace stats_command {

constexpr const char* kCommand = "stats";

int run_stats(const CtlOptions& options, const std::vector<std::string>& args) {
  std::vector<std::string> view_args = {"stats"};
  bool watch = false;
  int64_t every_s = 2;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--watch") {
      watch = true;
      if (i + 1 < args.size() && parse_int_arg(args[i + 1], 1, 3600, &every_s)) {
        ++i;
      }
    } else if (view_args.size() == 1 && !args[i].empty() && args[i][0] != '-') {
      view_args.push_back(args[i]);
    } else {
      return usage_error(kCommand, "bad argument '" + args[i] + "'");
    }
  }
  if (!watch) {
    return run_topic_stats(options, view_args);
  }
  install_stop_handlers();
  while (!stop_requested()) {
    std::printf("\033[H\033[2J");  // clear the terminal
    int exit_code = run_topic_stats(options, view_args);
    std::fflush(stdout);
    if (exit_code != kExitOk) {
      return exit_code;
    }
    for (int64_t waited = 0; waited < every_s * 1000 && !stop_requested(); waited += 100) {
      usleep(100 * 1000);
    }
  }
  return kExitOk;
}

constexpr const char* kUsage =
    "stats [TOPIC] [--watch [SECONDS]]   jobs by state and event counts per topic (as /metrics)";
const CommandRegistration kRegistered(kCommand, kUsage, &run_stats);

}  // namespace stats_command
}  // namespace dq::ctl
