// A topic's schedule edits, one workflow for every door (the HTTP API,
// dqctl, the admin page): each is a versioned write of the topic
// (common/registry/topic_writes.h), so an edit made meanwhile is refused,
// never undone, and every host sees the change through the registry.
#pragma once

#include <functional>
#include <string>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/topic_writes.h"

namespace dq {

// What a schedule add names: {"spec", "tz"?, "body"?, "catch_up"?,
// "paused"?}; kInvalid naming the first bad member (and nothing written).
Result<TopicSchedule> schedule_from_json(const Json& request);

// kConflict when the topic has a schedule of the same spec; done gets the
// schedule as stored.
void add_schedule(const TopicWriteContext& context, const std::string& topic,
                  TopicSchedule schedule, std::function<void(Result<TopicSchedule>)> done);
// kNotFound when the topic has no schedule of that spec.
void delete_schedule(const TopicWriteContext& context, const std::string& topic,
                     const std::string& spec, std::function<void(Result<TopicSchedule>)> done);
// Pauses (paused true) or resumes a schedule; kNotFound as for a delete.
void pause_schedule(const TopicWriteContext& context, const std::string& topic,
                    const std::string& spec, bool paused,
                    std::function<void(Result<TopicSchedule>)> done);

}  // namespace dq
