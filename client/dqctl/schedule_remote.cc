// Implements client/dqctl/schedule_remote.h.
#include "client/dqctl/schedule_remote.h"

#include <cstdio>
#include <vector>

#include "client/dqctl/api_client.h"
#include "client/dqctl/schedule_list.h"

namespace dq::ctl {
namespace {

namespace dc = dq::client;

constexpr int kScheduleTimeoutMs = 10000;

}  // namespace

int run_remote_schedule(const CtlOptions& options, const std::string& sub, const std::string& topic,
                        const std::string& spec, const Json& request) {
  dc::Client client = make_api_client(options, kScheduleTimeoutMs);
  if (sub == "list") {
    auto listed = client.list_schedules(topic);
    if (!listed) {
      return report_client_error(listed.error(), options.json);
    }
    std::vector<Json> schedules;
    for (const auto& schedule : *listed) {
      schedules.push_back(Json::parse(schedule.json, nullptr, false));
    }
    return print_schedule_list(options, topic, std::move(schedules));
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
