// The operator's topic writes, one workflow for every door: the HTTP API
// (PUT, PATCH, DELETE /v1/topics/{topic}), the admin page and dqctl (which
// waits on it: common/core/loop_waiter.h).
//
// A write reads the topic, applies the fields (common/registry/topic_fields.h),
// checks it (validate_topic, then the callback URL rules of
// common/registry/callback_rules.h for a URL it sets or changes) and writes it
// through the versioned path (common/registry/registry_write.h): at the
// version the writer names (If-Match), else at the version it read, so an
// edit made meanwhile is refused (409), never undone; through the shared
// registry first when [registry] shared = yes.
// A delete is refused while the topic holds jobs (pending or dead), unless
// purge deletes them with it (and sweeps once more after the registry's
// delete, for an add that raced it).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/core/config.h"
#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"
#include "common/store/shard_set.h"

namespace dq {

struct TopicWriteContext {
  Registry* registry = nullptr;
  const Config* config = nullptr;
  // Every shard: the shared registry's (the first) and, for a delete, those
  // that may hold the topic's jobs. May be nullptr for an add or edit when
  // the registry is not shared.
  const ShardSet* shards = nullptr;
};

enum class TopicEdit {
  kCreate,   // a new topic; kConflict when it exists
  kReplace,  // PUT: create, or set every field (absent ones to their defaults)
  kUpdate,   // PATCH: change the fields given; kNotFound when absent
};

struct TopicWriteRequest {
  std::string name;
  Json fields = Json::object();  // common/registry/topic_fields.h
  TopicEdit edit = TopicEdit::kUpdate;
  std::optional<int64_t> expected_version;  // If-Match / "version"; nullopt: as read
  // Applied after the fields, before the checks: a change that is not a
  // field, such as a schedule added (common/registry/schedule_writes.h).
  std::function<Status(Topic*)> change;
};

struct TopicWritten {
  Topic topic;  // as stored
  bool created = false;
  std::string new_signing_secret;  // a secret this write made: shown this once
  // topic_to_json, with the new secret in full when there is one.
  Json to_json() const;
};

// Signing keys are key material with a rotation overlap, not a setting: a
// kReplace keeps them unless signing_secret / signing_public_key are given.
// It keeps the schedules too: they have their own routes.
void write_topic(const TopicWriteContext& context, const TopicWriteRequest& request,
                 const std::function<void(Result<TopicWritten>)>& done);

struct TopicDeleted {
  std::string name;
  int64_t purged_jobs = 0;     // deleted with it (purge)
  int64_t in_flight_jobs = 0;  // of those, being delivered: their callbacks still complete
  int64_t held_jobs = 0;       // refused without purge: how many it still holds
};

// done(status, deleted): kConflict "still holds N job(s)" (held_jobs N)
// without purge when it holds any; every shard must answer (an unreachable
// one might hold jobs: kUnavailable).
void delete_topic(const TopicWriteContext& context, const std::string& name, bool purge,
                  std::optional<int64_t> expected_version,
                  const std::function<void(const Status&, const TopicDeleted&)>& done);

}  // namespace dq
