// Implements client/dqctl/schedule_list.h.
#include "client/dqctl/schedule_list.h"

#include <utility>

namespace dq::ctl {

int print_schedule_list(const CtlOptions& options, const std::string& topic,
                        std::vector<Json> schedules) {
  if (options.json) {
    print_json(Json{{"topic", topic}, {"schedules", std::move(schedules)}});
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"SPEC", "ZONE", "CATCH_UP", "STATE", "NEXT RUNS (UTC)", "BODY"}};
  for (const Json& shown : schedules) {
    std::string runs;
    for (const Json& run : shown.value("next_runs", Json::array())) {
      runs += (runs.empty() ? "" : " ") + (run.is_string() ? run.get<std::string>() : run.dump());
    }
    const Json body = shown.value("body", Json());
    rows.push_back({shown.value("spec", ""), shown.value("zone", ""), shown.value("catch_up", ""),
                    shown.value("paused", false) ? "paused" : "active", runs.empty() ? "-" : runs,
                    body.is_null()     ? ""
                    : body.is_string() ? body.get<std::string>()  // a template, as written
                                       : body.dump()});
  }
  print_rows(rows);
  return kExitOk;
}

}  // namespace dq::ctl
