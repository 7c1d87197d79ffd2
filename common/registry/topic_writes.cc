// Implements common/registry/topic_writes.h.
#include "common/registry/topic_writes.h"

#include <memory>
#include <utility>

#include "common/core/clock.h"
#include "common/registry/callback_rules.h"
#include "common/registry/registry_write.h"
#include "common/registry/topic_fields.h"
#include "common/registry/topic_json.h"
#include "common/store/topic_jobs.h"

namespace dq {
namespace {

using Written = std::function<void(Result<int64_t>)>;

// The versioned write, through the shared registry when the config says so.
void write_versioned(const TopicWriteContext& context, const ObjectWrite& write, Written done) {
  if (!context.config->shared_registry) {
    return done(write_registry_object(context.registry->db(), nullptr, write));
  }
  if (context.shards == nullptr) {
    return done(Status(Code::kUnavailable, "the shared registry's shard is not connected"));
  }
  write_registry_object_async(context.registry->db(), *context.shards, write, std::move(done));
}

// The topic as the request leaves it, checked; `before` is the stored one
// (nullptr when there is none).
Result<Topic> edited_topic(const TopicWriteContext& context, const TopicWriteRequest& request,
                           const Topic* before) {
  Topic topic;
  if (before != nullptr && request.edit == TopicEdit::kUpdate) {
    topic = *before;
  } else {
    topic.name = request.name;
    if (before != nullptr) {  // a replace keeps what is not a setting
      topic.created_at_ms = before->created_at_ms;
      topic.signing_keys = before->signing_keys;
      topic.schedules = before->schedules;
      topic.version = before->version;
    }
  }
  Status status = apply_topic_fields(request.fields, &topic, now_ms());
  if (status.is_ok() && request.change) {
    status = request.change(&topic);
  }
  if (status.is_ok()) {
    status = validate_topic(topic);
  }
  // The URL rules of the config and the registry's shards, for a URL this
  // write sets (one kept as it was passed them when it was set).
  if (status.is_ok() && !topic.callback_url.empty() &&
      (before == nullptr || topic.callback_url != before->callback_url)) {
    status = check_callback_url(*context.config, *context.registry, topic.callback_url);
  }
  if (status.is_ok() && !topic.dead_callback.empty() &&
      (before == nullptr || topic.dead_callback != before->dead_callback)) {
    status = dead_callback_status(
        check_callback_url(*context.config, *context.registry, topic.dead_callback));
  }
  if (!status.is_ok()) {
    return status;
  }
  return topic;
}

}  // namespace

Json TopicWritten::to_json() const {
  Json json = topic_to_json(topic);
  if (!new_signing_secret.empty()) {
    json["signing_secret"] = new_signing_secret;
  }
  return json;
}

void write_topic(const TopicWriteContext& context, const TopicWriteRequest& request,
                 const std::function<void(Result<TopicWritten>)>& done) {
  Registry* registry = context.registry;
  auto stored = registry->get_topic(request.name);
  if (!stored.is_ok() && stored.status().code() != Code::kNotFound) {
    return done(stored.status());
  }
  const Topic* before = stored.is_ok() ? &*stored : nullptr;
  if (before == nullptr && request.edit == TopicEdit::kUpdate) {
    return done(stored.status());
  }
  if (before != nullptr && request.edit == TopicEdit::kCreate) {
    return done(Status(Code::kConflict, "topic '" + request.name + "' already exists"));
  }
  if (before == nullptr && request.expected_version) {
    return done(Status(Code::kConflict, "topic '" + request.name +
                                            "' does not exist, but the write names version " +
                                            std::to_string(*request.expected_version)));
  }
  auto topic = edited_topic(context, request, before);
  if (!topic.is_ok()) {
    return done(topic.status());
  }
  bool create = before == nullptr;
  auto written = std::make_shared<TopicWritten>();
  written->topic = std::move(*topic);
  written->created = create;
  written->new_signing_secret = new_signing_secret(create ? Topic{} : *before, written->topic);
  ObjectWrite write{find_registry_kind("topic"), request.name,
                    create ? PutMode::kCreate : PutMode::kUpdate, request.expected_version,
                    [registry, written, create] {
                      return create ? registry->add_topic(written->topic)
                                    : registry->update_topic(written->topic);
                    }};
  write_versioned(context, write, [registry, written, done](const Result<int64_t>& version) {
    if (!version.is_ok()) {
      return done(version.status());
    }
    auto now = registry->get_topic(written->topic.name);
    if (now.is_ok()) {
      written->topic = std::move(*now);
    }
    done(std::move(*written));
  });
}

void delete_topic(const TopicWriteContext& context, const std::string& name, bool purge,
                  std::optional<int64_t> expected_version,
                  const std::function<void(const Status&, const TopicDeleted&)>& done) {
  auto result = std::make_shared<TopicDeleted>();
  result->name = name;
  auto stored = context.registry->get_topic(name);
  if (!stored.is_ok()) {
    return done(stored.status(), *result);
  }
  if (context.shards == nullptr) {
    return done(Status(Code::kUnavailable, "the redis shards are not connected"), *result);
  }
  const ShardSet* shards = context.shards;
  Registry* registry = context.registry;
  // Purged while being delivered: those callbacks still complete.
  auto in_flight = std::make_shared<int64_t>(0);
  ObjectWrite write{find_registry_kind("topic"), name, PutMode::kDelete, expected_version,
                    [registry, name] { return registry->delete_topic(name); }};
  // The registry's delete; after it (purge) one more sweep, for a producer
  // whose server had not yet seen the deletion and added a job meanwhile.
  auto remove = [context, write, shards, name, purge, result, in_flight, done]() {
    write_versioned(context, write, [=](const Result<int64_t>& written) {
      if (!written.is_ok()) {
        return done(written.status(), *result);
      }
      if (!purge) {
        return done(Status::ok(), *result);
      }
      purge_topic_jobs(
          *shards, name,
          [result, in_flight, done](Result<int64_t> late) {
            result->purged_jobs += late.is_ok() ? *late : 0;
            result->in_flight_jobs = *in_flight;
            done(Status::ok(), *result);
          },
          in_flight);
    });
  };
  if (purge) {
    return purge_topic_jobs(
        *shards, name,
        [result, remove, done](Result<int64_t> gone) {
          if (!gone.is_ok()) {
            return done(gone.status(), *result);
          }
          result->purged_jobs = *gone;
          remove();
        },
        in_flight);
  }
  count_topic_jobs(*shards, name, [name, result, remove, done](Result<int64_t> held) {
    if (!held.is_ok()) {
      return done(held.status(), *result);
    }
    if (*held > 0) {
      result->held_jobs = *held;
      return done(
          Status(Code::kConflict, "topic " + name + " still holds " + std::to_string(*held) +
                                      " job(s) (pending or dead); not deleted"),
          *result);
    }
    remove();
  });
}

}  // namespace dq
