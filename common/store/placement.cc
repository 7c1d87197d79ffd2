#include "common/store/placement.h"

#include <charconv>

#include "common/core/text_list.h"
#include "common/store/job_meta.h"

namespace dq {
namespace {

// A copy kept held is not an answer: a shard that could not be asked may
// hold the id with another body, and then this copy is dropped. Answered
// 504 (outcome unknown), never 2xx, until that shard has been asked
// (docs/decisions.md, "A held copy is not a 201").
Status held_outcome(const std::string& topic, const std::string& id) {
  return Status(Code::kUnknown,
                "outcome unknown: a shard that may hold job " + topic + "/" + id +
                    " is unreachable; a copy is kept and is delivered unless that shard holds "
                    "the id (with another body: then this add is refused); retry the same add "
                    "to learn the outcome");
}

}  // namespace

AddPlan plan_add(const std::vector<ShardAddress>& shards, const std::vector<size_t>& order,
                 const std::vector<bool>& reachable) {
  AddPlan plan;
  for (size_t index : order) {
    if (!reachable[index]) {
      plan.unreachable.push_back(shards[index].name());
      if (!plan.target) {
        plan.verify_against.push_back(shards[index].name());
      }
    } else if (!plan.target) {
      plan.target = index;
    }
  }
  return plan;
}

AddPlan plan_add(const std::vector<ShardAddress>& shards, const std::vector<size_t>& order,
                 const std::vector<bool>& reachable, const std::vector<bool>& placing) {
  AddPlan plan;
  for (size_t index : order) {
    if (!reachable[index]) {
      plan.unreachable.push_back(shards[index].name());
      if (!plan.target || !placing[index]) {
        plan.verify_against.push_back(shards[index].name());
      }
    } else if (!plan.target && placing[index]) {
      plan.target = index;
    }
  }
  if (!plan.target) {
    plan.verify_against.clear();
  }
  return plan;
}

std::string conflict_message(const std::string& topic, const std::string& id, JobState state) {
  std::string name = topic + "/" + id;
  if (state == JobState::kDead) {
    return "job " + name + " is in the dead-letter set; requeue or purge it first";
  }
  return "job " + name + " is already pending (" + state_name(state) + ") with another body";
}

Result<Added> read_add_reply(const redisReply* call_reply, size_t index, const std::string& topic,
                             const std::string& id) {
  if (call_reply->type != REDIS_REPLY_ARRAY || call_reply->elements <= index) {
    return Status(Code::kInternal, "unexpected reply to add");
  }
  const redisReply* reply = call_reply->element[index];
  // "verdict|due|state" (common/store/lua/add.lua): one string per job.
  if (reply->type != REDIS_REPLY_STRING) {
    return Status(Code::kInternal, "unexpected reply to add");
  }
  std::string_view text(reply->str, reply->len);
  size_t first_bar = text.find('|');
  size_t last_bar = text.rfind('|');
  if (first_bar == std::string_view::npos || last_bar == first_bar) {
    return Status(Code::kInternal, "unexpected reply to add");
  }
  std::string_view verdict = text.substr(0, first_bar);
  std::string_view due = text.substr(first_bar + 1, last_bar - first_bar - 1);
  std::string_view letter = text.substr(last_bar + 1);
  JobState state = JobState::kDelayed;
  if (letter.size() != 1 || !state_of_letter(letter[0], &state)) {
    return Status(Code::kInternal, "unexpected state in the reply to add");
  }
  if (verdict == "exists") {
    return Status(Code::kConflict, conflict_message(topic, id, state));
  }
  Added added;
  auto parsed = std::from_chars(due.data(), due.data() + due.size(), added.due_ms);
  if (parsed.ec != std::errc() || parsed.ptr != due.data() + due.size() ||
      (verdict != "added" && verdict != "same")) {
    return Status(Code::kInternal, "unexpected reply to add");
  }
  if (state == JobState::kHeld) {
    return held_outcome(topic, id);
  }
  added.existing = verdict == "same";
  return added;
}

Result<Added> read_copy_elsewhere(const Job& held, std::optional<std::string_view> stored_body,
                                  const std::string& body, const std::string& shard_name) {
  if (held.state != JobState::kDead && stored_body == std::string_view(body)) {
    if (held.state == JobState::kHeld) {
      return held_outcome(held.topic, held.id);
    }
    Added added;
    added.due_ms = held.due_at_ms;
    added.existing = true;
    return added;
  }
  return Status(Code::kConflict, conflict_message(held.topic, held.id, held.state) + " (on shard " +
                                     shard_name + ")");
}

DeletePlan plan_delete(const std::vector<CopySeen>& copies,
                       const std::vector<std::string>& unreachable, const std::string& topic,
                       const std::string& id) {
  DeletePlan plan;
  std::string name = topic + "/" + id;
  bool verified = false;
  for (const auto& copy : copies) {
    verified = verified || copy.state != JobState::kHeld;
  }
  if (unreachable.empty()) {
    if (copies.empty()) {
      plan.verdict = Status(Code::kNotFound, "job " + name + " not found");
    }
    return plan;
  }
  if (!verified) {
    plan.verdict =
        Status(Code::kUnavailable,
               "cannot delete job " + name + ": shard(s) " + join_list(unreachable, ", ") +
                   " unreachable and may hold it; nothing was changed, retry later");
    return plan;
  }
  plan.tomb = true;
  return plan;
}

bool is_unreachable(const Status& status) {
  return status.code() == Code::kUnavailable || status.code() == Code::kUnknown;
}

std::vector<std::string> shard_names(const std::vector<ShardAddress>& shards) {
  std::vector<std::string> names;
  names.reserve(shards.size());
  for (const auto& shard : shards) {
    names.push_back(shard.name());
  }
  return names;
}

}  // namespace dq
