// Implements common/registry/schedule_writes.h.
#include "common/registry/schedule_writes.h"

#include <memory>
#include <set>
#include <utility>

#include "common/core/clock.h"

namespace dq {
namespace {

using ScheduleDone = std::function<void(Result<TopicSchedule>)>;

// The schedule of `spec` in the topic as written, for the answer.
TopicSchedule written_schedule(const Topic& topic, const std::string& spec,
                               const TopicSchedule& fallback) {
  for (const TopicSchedule& schedule : topic.schedules) {
    if (schedule.spec == spec) {
      return schedule;
    }
  }
  return fallback;
}

// One edit of one schedule (found by spec) through the topic's versioned write.
void edit_schedule(const TopicWriteContext& context, const std::string& topic,
                   const std::string& spec,
                   std::function<Status(Topic*, std::vector<TopicSchedule>::iterator)> edit,
                   ScheduleDone done) {
  auto touched = std::make_shared<TopicSchedule>();
  TopicWriteRequest request;
  request.name = topic;
  request.edit = TopicEdit::kUpdate;
  request.change = [spec, edit, touched](Topic* stored) {
    auto found = stored->schedules.begin();
    while (found != stored->schedules.end() && found->spec != spec) {
      ++found;
    }
    if (found != stored->schedules.end()) {
      *touched = *found;
    }
    return edit(stored, found);
  };
  write_topic(context, request, [spec, touched, done](Result<TopicWritten> written) {
    if (!written.is_ok()) {
      return done(written.status());
    }
    done(written_schedule(written->topic, spec, *touched));
  });
}

Status no_schedule(const std::string& topic, const std::string& spec) {
  return Status(Code::kNotFound, "topic '" + topic + "' has no schedule '" + spec + "'");
}

}  // namespace

Result<TopicSchedule> schedule_from_json(const Json& request) {
  if (!request.is_object()) {
    return Status(Code::kInvalid, "the request must be a JSON object");
  }
  static const std::set<std::string> kMembers = {"spec", "tz", "body", "catch_up", "paused"};
  for (const auto& item : request.items()) {
    if (kMembers.count(item.key()) == 0) {
      return Status(Code::kInvalid, "unknown member '" + item.key() +
                                        "' (a schedule has spec, tz, body, catch_up, paused)");
    }
  }
  TopicSchedule schedule;
  const Json* spec = request.contains("spec") ? &request["spec"] : nullptr;
  if (spec == nullptr || !spec->is_string() || spec->get<std::string>().empty()) {
    return Status(Code::kInvalid, "spec: a cron spec (\"*/15 * * * *\") or \"@every 10s\"");
  }
  schedule.spec = spec->get<std::string>();
  for (const char* text : {"tz", "catch_up"}) {
    if (request.contains(text) && !request[text].is_string()) {
      return Status(Code::kInvalid, std::string(text) + ": must be a string");
    }
  }
  schedule.tz = request.value("tz", std::string());
  schedule.catch_up = request.value("catch_up", std::string("one"));
  if (request.contains("paused")) {
    if (!request["paused"].is_boolean()) {
      return Status(Code::kInvalid, "paused: must be true or false");
    }
    schedule.paused = request["paused"].get<bool>();
  }
  if (request.contains("body")) {
    const Json& body = request["body"];
    // A body given as a JSON text (dqctl --body) or as the JSON itself.
    schedule.body = body.is_string() ? body.get<std::string>() : body.dump();
  }
  return schedule;
}

void add_schedule(const TopicWriteContext& context, const std::string& topic,
                  TopicSchedule schedule, ScheduleDone done) {
  schedule.id = new_schedule_id();
  schedule.created_at_ms = now_ms();
  std::string spec = schedule.spec;
  edit_schedule(
      context, topic, spec,
      [topic, spec, schedule](Topic* stored, std::vector<TopicSchedule>::iterator found) {
        if (found != stored->schedules.end()) {
          return Status(Code::kConflict,
                        "topic '" + topic + "' has a schedule '" + spec + "' already");
        }
        stored->schedules.push_back(schedule);
        return Status::ok();
      },
      std::move(done));
}

void delete_schedule(const TopicWriteContext& context, const std::string& topic,
                     const std::string& spec, ScheduleDone done) {
  edit_schedule(
      context, topic, spec,
      [topic, spec](Topic* stored, std::vector<TopicSchedule>::iterator found) {
        if (found == stored->schedules.end()) {
          return no_schedule(topic, spec);
        }
        stored->schedules.erase(found);
        return Status::ok();
      },
      std::move(done));
}

void pause_schedule(const TopicWriteContext& context, const std::string& topic,
                    const std::string& spec, bool paused, ScheduleDone done) {
  edit_schedule(
      context, topic, spec,
      [topic, spec, paused](Topic* stored, std::vector<TopicSchedule>::iterator found) {
        if (found == stored->schedules.end()) {
          return no_schedule(topic, spec);
        }
        found->paused = paused;
        return Status::ok();
      },
      std::move(done));
}

}  // namespace dq
