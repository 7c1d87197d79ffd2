// dq::client::Client's schedule calls (/v1/topics/{topic}/schedules,
// docs/schedules.md), on the shared request loop of client_impl.h.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client_impl.h"

namespace dq::client {
namespace {

// A schedule object of the server's answers; nullopt when it is not one.
std::optional<Schedule> schedule_of(const Json& object) {
  if (!object.is_object() || !object.contains("spec") || !object["spec"].is_string()) {
    return std::nullopt;
  }
  Schedule schedule;
  schedule.spec = object["spec"].get<std::string>();
  schedule.id = object.value("id", "");
  schedule.paused = object.value("paused", false);
  schedule.json = object.dump();
  return schedule;
}

}  // namespace

Result<std::vector<Schedule>> Client::list_schedules(const std::string& topic) {
  auto got =
      impl_->object_call("GET", impl_->schedules_path(topic), "", "list_schedules", {"schedules"});
  if (!got) {
    return got.error();
  }
  std::vector<Schedule> out;
  for (const Json& object : got->reply["schedules"]) {
    auto schedule = schedule_of(object);
    if (!schedule) {
      return Error{ErrorCode::Protocol, 200, "list_schedules: unexpected answer: " + got->body,
                   got->server};
    }
    out.push_back(std::move(*schedule));
  }
  return out;
}

Result<Schedule> Client::add_schedule(const std::string& topic, const std::string& fields_json) {
  Json fields = Json::parse(fields_json, nullptr, false);
  if (!fields.is_object() || !fields.contains("spec") || !fields["spec"].is_string()) {
    return Error{ErrorCode::InvalidArgument, 0,
                 "schedule fields must be a JSON object with a \"spec\" string", ""};
  }
  bool unsure = false;
  auto called = impl_->call("POST", impl_->schedules_path(topic), fields_json, &unsure);
  if (!called) {
    return called.error();
  }
  const HttpAnswer& answer = called->answer;
  if (answer.status == 409 && unsure) {
    // An attempt that timed out (or answered 504) may have added it.
    auto listed = list_schedules(topic);
    if (listed) {
      for (auto& schedule : *listed) {
        if (schedule.spec == fields["spec"].get<std::string>()) {
          return std::move(schedule);
        }
      }
    }
  }
  if (answer.status != 201) {
    return error_from_answer(answer, called->server);
  }
  auto schedule = schedule_of(Json::parse(answer.body, nullptr, false));
  if (!schedule) {
    return protocol_error("add_schedule: unexpected answer: " + answer.body, answer,
                          called->server);
  }
  return std::move(*schedule);
}

Result<Schedule> Client::pause_schedule(const std::string& topic, const std::string& spec,
                                        bool paused) {
  auto got = impl_->object_call("PATCH", impl_->schedules_path(topic),
                                Json{{"spec", spec}, {"paused", paused}}.dump(), "pause_schedule",
                                {"spec"});
  if (!got) {
    return got.error();
  }
  auto schedule = schedule_of(got->reply);
  if (!schedule) {
    return Error{ErrorCode::Protocol, 200, "pause_schedule: unexpected answer: " + got->body,
                 got->server};
  }
  return std::move(*schedule);
}

Result<std::string> Client::delete_schedule(const std::string& topic, const std::string& spec) {
  bool unsure = false;
  auto called = impl_->call(
      "DELETE", impl_->schedules_path(topic) + "?spec=" + impl_->transport_.escape(spec), "",
      &unsure);
  if (!called) {
    return called.error();
  }
  const HttpAnswer& answer = called->answer;
  if (answer.status == 404 && unsure) {
    // An attempt that timed out (or answered 504) may have deleted it; a
    // 404 for the topic itself stays an error.
    auto listed = list_schedules(topic);
    if (listed) {
      return std::string();
    }
  }
  if (answer.status != 200) {
    return error_from_answer(answer, called->server);
  }
  Json reply = Json::parse(answer.body, nullptr, false);
  if (!reply.is_object() || !reply.contains("deleted")) {
    return protocol_error("delete_schedule: unexpected answer: " + answer.body, answer,
                          called->server);
  }
  return reply.value("id", "");
}

}  // namespace dq::client
