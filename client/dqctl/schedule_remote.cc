// Implements client/dqctl/schedule_remote.h.
#include "client/dqctl/schedule_remote.h"

#include <cstdio>
#include <vector>

#include "client/dqctl/api_client.h"

namespace dq::ctl {
namespace {

namespace dc = dq::client;

constexpr int kScheduleTimeoutMs = 10000;

// The table `schedule list` prints locally, from the server's objects.
void print_table(const std::vector<dc::Schedule>& schedules) {
  std::vector<std::vector<std::string>> rows = {
      {"SPEC", "ZONE", "CATCH_UP", "STATE", "NEXT RUNS (UTC)", "BODY"}};
  for (const auto& schedule : schedules) {
    Json shown = Json::parse(schedule.json, nullptr, false);
    std::string runs;
    for (const Json& run : shown.value("next_runs", Json::array())) {
      runs += (runs.empty() ? "" : " ") + (run.is_string() ? run.get<std::string>() : run.dump());
    }
    const Json& body = shown.contains("body") ? shown["body"] : Json();
    rows.push_back({schedule.spec, shown.value("zone", ""), shown.value("catch_up", ""),
                    schedule.paused ? "paused" : "active", runs.empty() ? "-" : runs,
                    body.is_null() ? "" : body.dump()});
  }
  print_rows(rows);
}

}  // namespace

int run_remote_schedule(const CtlOptions& options, const std::string& sub, const std::string& topic,
                        const std::string& spec, const Json& request) {
  dc::Client client = make_api_client(options, kScheduleTimeoutMs);
  if (sub == "list") {
    auto listed = client.list_schedules(topic);
    if (!listed) {
      return report_client_error(listed.error(), options.json);
    }
    if (options.json) {
      Json schedules = Json::array();
      for (const auto& schedule : *listed) {
        schedules.push_back(Json::parse(schedule.json, nullptr, false));
      }
      print_json(Json{{"topic", topic}, {"schedules", std::move(schedules)}});
    } else {
      print_table(*listed);
    }
    return kExitOk;
  }
  if (sub == "del") {
    auto deleted = client.delete_schedule(topic, spec);
    if (!deleted) {
      return report_client_error(deleted.error(), options.json);
    }
    if (options.json) {
      print_json(Json{{"deleted", spec}, {"id", *deleted}});
    } else {
      printf("schedule '%s' of topic %s deleted\n", spec.c_str(), topic.c_str());
    }
    return kExitOk;
  }
  dc::Result<dc::Schedule> written =
      sub == "add" ? client.add_schedule(topic, request.dump())
                   : client.pause_schedule(topic, spec, /*paused=*/sub == "pause");
  if (!written) {
    return report_client_error(written.error(), options.json);
  }
  if (options.json) {
    print_json(Json::parse(written->json, nullptr, false));
  } else {
    const char* done = sub == "add" ? "added" : sub == "pause" ? "paused" : "resumed";
    printf("schedule '%s' of topic %s %s\n", written->spec.c_str(), topic.c_str(), done);
  }
  return kExitOk;
}

}  // namespace dq::ctl
