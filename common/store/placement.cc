#include "common/store/placement.h"

#include <charconv>

#include "common/store/job_meta.h"

namespace dq {
namespace {

// The shards that took new jobs before the change under way: a draining
// shard did, one moving in did not.
bool took_jobs_before(ShardRole role) {
  return role == ShardRole::kActive || role == ShardRole::kLeaving || role == ShardRole::kDraining;
}

// The shards that take new jobs once the change under way is done.
bool takes_jobs_after(ShardRole role) {
  return role == ShardRole::kActive || role == ShardRole::kMovingIn || role == ShardRole::kJoining;
}

}  // namespace

std::string_view placement_key(std::string_view job_key) {
  // "topic:schedule:<schedule id>:<tick>" -> "topic:schedule:<schedule id>"
  constexpr std::string_view kScheduleIds = "schedule:";
  size_t colon = job_key.find(':');
  if (colon == std::string_view::npos ||
      job_key.substr(colon + 1, kScheduleIds.size()) != kScheduleIds) {
    return job_key;
  }
  size_t end = job_key.find(':', colon + 1 + kScheduleIds.size());
  return end == std::string_view::npos ? job_key : job_key.substr(0, end);
}

bool takes_new_jobs(ShardRole role) {
  return role == ShardRole::kActive || role == ShardRole::kMovingIn || role == ShardRole::kLeaving;
}

std::vector<size_t> IdHomes::asked() const {
  std::vector<size_t> out{home};
  if (previous) {
    out.push_back(*previous);
  }
  if (next && next != previous) {
    out.push_back(*next);
  }
  return out;
}

std::vector<size_t> IdHomes::lookup_order() const {
  std::vector<size_t> order;
  if (previous) {
    order.push_back(*previous);
  }
  order.push_back(home);
  if (next && next != previous) {
    order.push_back(*next);
  }
  return order;
}

std::optional<IdHomes> id_homes(const std::vector<ShardAddress>& shards,
                                const std::vector<ShardRole>& roles, std::string_view job_key) {
  std::optional<size_t> home;
  std::optional<size_t> before;
  std::optional<size_t> after;
  for (size_t index : shard_order(shards, placement_key(job_key))) {
    ShardRole role = roles[index];
    if (!home && takes_new_jobs(role)) {
      home = index;
    }
    if (!before && took_jobs_before(role)) {
      before = index;
    }
    if (!after && takes_jobs_after(role)) {
      after = index;
    }
  }
  if (!home) {
    return std::nullopt;
  }
  IdHomes homes;
  homes.home = *home;
  if (before && *before != *home) {
    homes.previous = before;
  }
  if (after && *after != *home) {
    homes.next = after;
  }
  return homes;
}

std::vector<ShardRole> roles_of(const Config& config) {
  std::vector<ShardRole> roles;
  roles.reserve(config.shards.size());
  for (const auto& shard : config.shards) {
    auto found = config.shard_roles.find(shard.name());
    roles.push_back(found == config.shard_roles.end() ? ShardRole::kActive : found->second);
  }
  return roles;
}

std::string conflict_message(const std::string& topic, const std::string& id, JobState state) {
  std::string name = topic + "/" + id;
  if (state == JobState::kDead) {
    return "job " + name + " is in the dead-letter set; requeue or purge it first";
  }
  return "job " + name + " is already pending (" + state_name(state) + ") with another body";
}

namespace {

// "due|how|ended at" of an add.lua "ended" verdict: the job was delivered
// (or died) within its topic's dedup window; the add was a retry.
Result<Added> read_ended(std::string_view text) {
  size_t first_bar = text.find('|');
  size_t last_bar = text.rfind('|');
  Added added;
  added.existing = true;
  if (first_bar == std::string_view::npos || last_bar == first_bar) {
    return Status(Code::kInternal, "unexpected reply to add");
  }
  std::string_view due = text.substr(0, first_bar);
  std::string_view at = text.substr(last_bar + 1);
  added.ended = std::string(text.substr(first_bar + 1, last_bar - first_bar - 1));
  auto due_read = std::from_chars(due.data(), due.data() + due.size(), added.due_ms);
  auto at_read = std::from_chars(at.data(), at.data() + at.size(), added.ended_at_ms);
  if (due_read.ec != std::errc() || at_read.ec != std::errc() ||
      at_read.ptr != at.data() + at.size() ||
      (added.ended != "delivered" && added.ended != "dead")) {
    return Status(Code::kInternal, "unexpected reply to add");
  }
  return added;
}

}  // namespace

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
  if (verdict == "ended") {
    return read_ended(text.substr(first_bar + 1));
  }
  std::string_view due = text.substr(first_bar + 1, last_bar - first_bar - 1);
  std::string_view letter = text.substr(last_bar + 1);
  if (verdict == "fenced") {
    // The shard list is changing and a host that already sees the change may
    // place this id on its next home: nothing was written here.
    return Status(Code::kUnavailable,
                  "job " + topic + "/" + id + " not added: its home is moving to shard " +
                      std::string(letter) +
                      " (the shard list is changing); nothing was written, retry in a second");
  }
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
  added.existing = verdict == "same";
  added.waiting = state == JobState::kWaiting;
  return added;
}

Result<Added> read_copy_elsewhere(const Job& found, std::optional<std::string_view> stored_body,
                                  const std::string& body, const std::string& shard_name) {
  if (found.state != JobState::kDead && stored_body == std::string_view(body)) {
    Added added;
    added.due_ms = found.due_at_ms;
    added.existing = true;
    return added;
  }
  return Status(Code::kConflict, conflict_message(found.topic, found.id, found.state) +
                                     " (on shard " + shard_name + ")");
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
