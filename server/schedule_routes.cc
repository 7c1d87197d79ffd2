// HttpApi's schedule routes (docs/schedules.md): GET, POST, PATCH and DELETE
// /v1/topics/{topic}/schedules. The writes are common/registry/schedule_writes.h,
// the workflow dqctl uses too: each is a versioned write of the topic, through
// the shared registry when [registry] shared = yes.
#include "common/core/clock.h"
#include "common/core/http_status.h"
#include "common/core/log.h"
#include "common/http/http_request.h"
#include "common/registry/schedule_writes.h"
#include "server/http_api.h"

namespace dq {
namespace {

constexpr const char* kSchedulesLabel = "schedules";
constexpr size_t kListedNextRuns = 5;  // the next run times a listing shows

}  // namespace

void HttpApi::list_schedules(const Exchange& request, const std::string& topic) {
  topics_.refresh_if_older(200);  // a schedule added a moment ago is listed
  const Topic* found = topics_.find_or_reload(topic);
  if (found == nullptr) {
    return finish(request, kSchedulesLabel, 404,
                  Json{{"error", "topic '" + topic + "' does not exist"}});
  }
  Json schedules = Json::array();
  int64_t now = now_ms();
  for (const TopicSchedule& schedule : found->schedules) {
    schedules.push_back(schedule_to_json(schedule, found->tz, now, kListedNextRuns));
  }
  finish(request, kSchedulesLabel, 200,
         Json{{"topic", topic}, {"schedules", std::move(schedules)}});
}

void HttpApi::write_schedule(const Exchange& request, const std::string& topic,
                             const std::string& method) {
  Json body = Json::parse(request->body(), nullptr, false);
  std::string spec;
  if (method == "DELETE") {
    spec = query_value(std::string(request->query()), "spec");
    if (spec.empty()) {
      return finish(request, kSchedulesLabel, 400,
                    Json{{"error", "spec: name the schedule to delete (?spec=...)"}});
    }
  } else if (body.is_discarded() || !body.is_object()) {
    return finish(request, kSchedulesLabel, 400,
                  Json{{"error", "request body must be a JSON object (a schedule)"}});
  }
  std::optional<int64_t> version;
  TopicWriteContext context;
  if (!ready_to_write(request, Json::object(), &version, &context)) {
    return;
  }
  auto answered = [this, request, topic, method](Result<TopicSchedule> written) {
    if (!written.is_ok()) {
      request_log().info("schedule {} {} -> {} {}", method, topic,
                         http_status_of(written.status().code()), written.status().message());
      return finish(request, kSchedulesLabel, http_status_of(written.status().code()),
                    Json{{"error", written.status().message()}});
    }
    (void)topics_.refresh();  // this server lists it at once
    const Topic* now = topics_.find(topic);
    std::string tz = now != nullptr ? now->tz : "";
    request_log().info("schedule {} {} '{}' -> ok", method, topic, written->spec);
    finish(request, kSchedulesLabel, method == "POST" ? 201 : 200,
           method == "DELETE" ? Json{{"deleted", written->spec}, {"id", written->id}}
                              : schedule_to_json(*written, tz, now_ms(), kListedNextRuns));
  };
  if (method == "DELETE") {
    return delete_schedule(context, topic, spec, answered);
  }
  if (method == "PATCH") {
    if (!body.contains("spec") || !body["spec"].is_string() || !body.contains("paused") ||
        !body["paused"].is_boolean() || body.size() != 2) {
      return finish(request, kSchedulesLabel, 400,
                    Json{{"error",
                          "a PATCH names the schedule and what it becomes: "
                          "{\"spec\": \"...\", \"paused\": true|false}"}});
    }
    return pause_schedule(context, topic, body["spec"].get<std::string>(),
                          body["paused"].get<bool>(), answered);
  }
  auto schedule = schedule_from_json(body);
  if (!schedule.is_ok()) {
    return finish(request, kSchedulesLabel, 400, Json{{"error", schedule.status().message()}});
  }
  add_schedule(context, topic, std::move(*schedule), answered);
}

}  // namespace dq
