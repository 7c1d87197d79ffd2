// AsyncJobStore (common/store/async_job_store.h): adds, lookups and deletes
// over async shards, with the one-copy rules of common/store/placement.h. The
// timer's and consumer's calls are in async_job_leases.cc.
#include "common/store/async_job_store.h"

#include <algorithm>

#include "common/core/log.h"
#include "common/store/job_meta.h"
#include "common/store/job_records.h"
#include "common/store/keys.h"
#include "common/store/script_calls.h"
#include "common/store/shard_reasons.h"

namespace dq {
namespace {

// How long an add or delete waits for another shard's answer to "do you hold
// this id?" before counting it unreachable, so a stalled shard costs adds at
// most this much while it is not yet marked down.
constexpr int kProbeFloorMs = 50;

std::string reply_text(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    return std::string(reply->str, reply->len);
  }
  return {};
}

// Not found on any shard that answered: 404, unless a down shard (`down`,
// the first one seen) may hold it.
Status missing_job(const std::string& topic, const std::string& id, const std::string& down) {
  if (!down.empty()) {
    return Status(Code::kUnavailable, "job " + topic + "/" + id +
                                          " is not on any reachable shard; shard " + down +
                                          " is down and may hold it");
  }
  return Status(Code::kNotFound, "job " + topic + "/" + id + " not found");
}

}  // namespace

// One add in progress: other shards are asked whether they hold the id, then
// the add script runs on the target; a target that turns out to be down
// (nothing sent) starts another round with the next shard.
struct AsyncJobStore::AddState {
  AddRequest request;
  std::vector<size_t> order;
  std::vector<bool> reachable;
  AddPlan plan;  // planned once per round; a shard that cannot be asked joins plan.unreachable
  size_t checks_left = 0;
  std::optional<size_t> found_on;  // another shard holds the id
  Job found;
  bool found_inline = false;  // its record carries the body
  Status refused;             // a shard's refusal (full, read-only...), for the 503
  AsyncJobStore::AddDone done;

  void finish(Result<Added> added) { done(request, std::move(added)); }
};

// What every shard that answered said about one id.
struct AsyncJobStore::Lookup {
  std::string topic;
  std::string id;
  size_t left = 0;
  std::vector<CopySeen> copies;
  std::vector<Job> metas;  // parallel to copies
  std::vector<std::string> unreachable;
  Status error;  // a Redis error other than unreachable
};

AsyncJobStore::AsyncJobStore(event_base* base, const Config& config)
    : addresses_(config.shards),
      names_(shard_names(config.shards)),
      probe_timeout_ms_(std::max(kProbeFloorMs, config.redis_probe_timeout_ms)),
      command_timeout_ms_(config.redis_command_timeout_ms),
      checker_(config.pid_file),
      batcher_(base) {
  for (const auto& address : addresses_) {
    placing_.push_back(std::find(config.no_new_jobs.begin(), config.no_new_jobs.end(),
                                 address.name()) == config.no_new_jobs.end());
    shards_.push_back(std::make_unique<AsyncShard>(base, address, config.redis_connect_timeout_ms,
                                                   config.redis_command_timeout_ms));
    if (config.redis_wait_replicas > 0) {
      confirms_.push_back(std::make_unique<ReplicaConfirm>(
          base, address, config.redis_connect_timeout_ms, config.redis_command_timeout_ms,
          config.redis_wait_replicas, config.redis_wait_timeout_ms));
    }
  }
}

std::vector<AsyncShard*> AsyncJobStore::connections() const {
  std::vector<AsyncShard*> out;
  for (const auto& shard : shards_) {
    out.push_back(shard.get());
  }
  return out;
}

void AsyncJobStore::start() {
  for (auto& shard : shards_) {
    shard->start();
  }
  for (auto& confirm : confirms_) {
    confirm->start();
  }
}

void AsyncJobStore::start(size_t shard) {
  shards_[shard]->start();
  if (!confirms_.empty()) {
    confirms_[shard]->start();
  }
}

bool AsyncJobStore::connecting(size_t shard) const {
  return shards_[shard]->connecting() || (!confirms_.empty() && confirms_[shard]->connecting());
}

void AsyncJobStore::shutdown() {
  batcher_.flush(true);  // queued adds are sent, then failed with the rest below
  // A callback that moves on to a later shard (get) may send there; that
  // shard's own stop() below fails it in turn, so nothing is left waiting.
  for (auto& shard : shards_) {
    shard->stop();
  }
  for (auto& confirm : confirms_) {
    confirm->stop();
  }
}

void AsyncJobStore::add(AddRequest request, AddDone done) {
  auto state = std::make_shared<AddState>();
  state->request = std::move(request);
  state->done = std::move(done);
  state->order = shard_order(addresses_, job_key(state->request.topic, state->request.id));
  state->reachable.resize(shards_.size());
  for (size_t i = 0; i < shards_.size(); ++i) {
    state->reachable[i] = usable(i);
  }
  add_round(std::move(state));
}

void AsyncJobStore::add_round(std::shared_ptr<AddState> state) {
  state->plan = plan_add(addresses_, state->order, state->reachable, placing_);
  const AddPlan& plan = state->plan;
  if (!plan.target) {
    state->finish(no_shard_can_take(shards_, checker_, state->refused,
                                    state->request.topic + "/" + state->request.id));
    return;
  }
  std::vector<size_t> others;
  for (size_t index : state->order) {
    if (state->reachable[index] && index != *plan.target) {
      others.push_back(index);
    }
  }
  if (others.empty()) {
    run_add(std::move(state));
    return;
  }
  state->checks_left = others.size();
  const std::string key = job_key(state->request.topic, state->request.id);
  for (size_t index : others) {
    shards_[index]->probe(
        record_read_argv(key), probe_timeout_ms_,
        [this, state, index](Result<const redisReply*> reply) {
          if (!reply.is_ok()) {
            // Cannot be asked: the copy remembers it. Every shard asked ranks
            // after the target, so the target and verify_against stay; one
            // given no new job may hold the id wherever it ranks.
            state->reachable[index] = false;
            state->plan.unreachable.push_back(addresses_[index].name());
            if (!placing_[index]) {
              state->plan.verify_against.push_back(addresses_[index].name());
            }
          } else if ((*reply)->type == REDIS_REPLY_STRING && !state->found_on) {
            Job job;
            job.topic = state->request.topic;
            job.id = state->request.id;
            const std::string record = reply_text(*reply);
            if (parse_job_meta(record, &job)) {
              state->found_on = index;
              state->found_inline = body_is_inline(record);
              state->found = std::move(job);
            }
          }
          if (--state->checks_left > 0) {
            return;
          }
          if (!state->found_on) {
            run_add(state);
            return;
          }
          // Another shard holds it: the same body is a retried add.
          size_t holder = *state->found_on;
          if (state->found_inline) {
            state->finish(read_copy_elsewhere(state->found, state->found.body, state->request.body,
                                              addresses_[holder].name()));
            return;
          }
          shards_[holder]->command(
              {"HGET", keys::bodies(), job_key(state->request.topic, state->request.id)},
              [this, state, holder](Result<const redisReply*> body) {
                if (!body.is_ok()) {
                  state->finish(body.status());
                  return;
                }
                std::optional<std::string_view> stored;
                if ((*body)->type == REDIS_REPLY_STRING) {
                  stored = std::string_view((*body)->str, (*body)->len);
                }
                state->finish(read_copy_elsewhere(state->found, stored, state->request.body,
                                                  addresses_[holder].name()));
              });
        });
  }
}

void AsyncJobStore::run_add(std::shared_ptr<AddState> state) {
  const AddPlan& plan = state->plan;
  const AddRequest& r = state->request;
  size_t target = *plan.target;
  AsyncShard* writer = confirms_.empty() ? shards_[target].get() : &confirms_[target]->connection();
  batcher_.add(
      writer, plan.verify_against, plan.unreachable, r,
      [this, state = std::move(state), target](Result<const redisReply*> reply, size_t index) {
        if (reply.is_ok()) {
          Result<Added> added =
              read_add_reply(*reply, index, state->request.topic, state->request.id);
          if (confirms_.empty() || !added.is_ok()) {
            return state->finish(std::move(added));
          }
          // Also for a retried add (existing): its answer waits for the
          // replicas too, so a retry after a replication_timeout confirms.
          confirms_[target]->confirm([state, added](const Status& replicated) {
            state->finish(replicated.is_ok() ? added : Result<Added>(replicated));
          });
        } else if (reply.status().code() == Code::kUnavailable) {
          // Not sent (the shard went down a moment ago) or refused (full,
          // read-only...): nothing written. Try the next one.
          state->reachable[target] = false;
          state->refused = reply.status();
          state->found_on.reset();
          add_round(state);
        } else {
          state->finish(reply.status());  // kUnknown: 504, the client may retry safely
        }
      });
}

void AsyncJobStore::look_everywhere(const std::string& topic, const std::string& id,
                                    const std::function<void(std::shared_ptr<Lookup>)>& done) {
  auto lookup = std::make_shared<Lookup>();
  lookup->topic = topic;
  lookup->id = id;
  std::vector<size_t> asked;
  const std::string key = job_key(topic, id);
  for (size_t index : shard_order(addresses_, key)) {  // each shard that may hold it
    if (usable(index)) {
      asked.push_back(index);
    } else {
      lookup->unreachable.push_back(names_[index]);
    }
  }
  lookup->left = asked.size();
  if (asked.empty()) {
    done(lookup);
    return;
  }
  for (size_t index : asked) {
    shards_[index]->probe(record_read_argv(key), probe_timeout_ms_,
                          [this, lookup, index, done](Result<const redisReply*> reply) {
                            if (!reply.is_ok()) {
                              if (is_unreachable(reply.status())) {
                                lookup->unreachable.push_back(names_[index]);
                              } else {
                                lookup->error = reply.status();
                              }
                            } else if ((*reply)->type == REDIS_REPLY_STRING) {
                              Job job;
                              job.topic = lookup->topic;
                              job.id = lookup->id;
                              if (parse_job_meta(reply_text(*reply), &job)) {
                                lookup->copies.push_back({index, job.state});
                                lookup->metas.push_back(std::move(job));
                              }
                            }
                            if (--lookup->left == 0) {
                              done(lookup);
                            }
                          });
  }
}

void AsyncJobStore::look_for_moving(const std::string& topic, const std::string& id,
                                    const std::function<void(std::shared_ptr<Lookup>)>& done) {
  look_everywhere(topic, id, [this, topic, id, done](std::shared_ptr<Lookup> lookup) {
    if (!lookup->copies.empty() || !lookup->error.is_ok() || !any_not_placing()) {
      done(std::move(lookup));
      return;
    }
    look_everywhere(topic, id, done);
  });
}

bool AsyncJobStore::any_not_placing() const {
  return std::find(placing_.begin(), placing_.end(), false) != placing_.end();
}

void AsyncJobStore::get(const std::string& topic, const std::string& id,
                        std::function<void(Result<Job>)> done) {
  std::vector<size_t> order = shard_order(addresses_, job_key(topic, id));
  if (!any_not_placing()) {
    find_job(topic, id, std::move(order), 0, "", std::move(done));
    return;
  }
  // Not found once while a shard drains: asked again (see look_for_moving).
  find_job(topic, id, order, 0, "",
           [this, topic, id, order, done = std::move(done)](Result<Job> job) mutable {
             if (job.is_ok() || job.status().code() != Code::kNotFound) {
               done(std::move(job));
               return;
             }
             find_job(topic, id, std::move(order), 0, "", std::move(done));
           });
}

void AsyncJobStore::find_job(const std::string& topic, const std::string& id,
                             std::vector<size_t> order, size_t next, std::string down,
                             std::function<void(Result<Job>)> done) {
  while (next < order.size() && !usable(order[next])) {
    if (down.empty()) {
      down = names_[order[next]];
    }
    ++next;
  }
  if (next == order.size()) {
    done(missing_job(topic, id, down));
    return;
  }
  size_t index = order[next];
  shards_[index]->probe(
      record_read_argv(job_key(topic, id)), probe_timeout_ms_,
      [=, done = std::move(done)](Result<const redisReply*> reply) mutable {
        if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_STRING) {
          if (!reply.is_ok() && down.empty()) {
            down = names_[index];
          }
          find_job(topic, id, std::move(order), next + 1, std::move(down), std::move(done));
          return;
        }
        Job job;
        job.topic = topic;
        job.id = id;
        const std::string record = reply_text(*reply);
        if (!parse_job_meta(record, &job)) {
          done(Status(Code::kInternal, "job " + topic + "/" + id + " has a malformed record"));
          return;
        }
        read_body(index, std::move(job), body_is_inline(record), std::move(done));
      });
}

// The body (unless the record carried it), then the last error of a job
// tried before.
void AsyncJobStore::read_body(size_t shard, Job job, bool body_read,
                              std::function<void(Result<Job>)> done) {
  AsyncShard* redis = shards_[shard].get();
  if (body_read) {
    read_last_error(redis, std::move(job), std::move(done));
    return;
  }
  redis->command({"HGET", keys::bodies(), job_key(job.topic, job.id)},
                 [redis, job, done = std::move(done)](Result<const redisReply*> body) mutable {
                   if (!body.is_ok()) {
                     done(Status(Code::kUnavailable, body.status().message()));
                     return;
                   }
                   if ((*body)->type == REDIS_REPLY_STRING) {
                     job.body = reply_text(*body);
                   }
                   read_last_error(redis, std::move(job), std::move(done));
                 });
}

void AsyncJobStore::read_last_error(AsyncShard* redis, Job job,
                                    std::function<void(Result<Job>)> done) {
  // A job tried before (retrying, dead, or ready or working again after a
  // failure or an expired lease) may have one; a job never tried has none.
  if (job.attempts == 0 && job.state != JobState::kRetrying && job.state != JobState::kDead) {
    done(std::move(job));
    return;
  }
  redis->command({"HGET", keys::errors(), job_key(job.topic, job.id)},
                 [job, done = std::move(done)](Result<const redisReply*> error) mutable {
                   if (error.is_ok() && (*error)->type == REDIS_REPLY_STRING) {
                     parse_error_entry(reply_text(*error), &job);
                   }
                   done(std::move(job));
                 });
}

void AsyncJobStore::del(const std::string& topic, const std::string& id, DelDone done) {
  look_for_moving(topic, id, [this, done = std::move(done)](const std::shared_ptr<Lookup>& lookup) {
    if (!lookup->error.is_ok()) {
      done(lookup->error, false);
      return;
    }
    DeletePlan plan = plan_delete(lookup->copies, lookup->unreachable, lookup->topic, lookup->id);
    if (!plan.verdict.is_ok() || lookup->copies.empty()) {
      done(plan.verdict, false);
      return;
    }
    struct Deleting {
      size_t left = 0;
      Status status;
      bool in_flight = false;  // a copy was being delivered (state w) when deleted
      DelDone done;
    };
    auto deleting = std::make_shared<Deleting>();
    deleting->left = lookup->copies.size();
    deleting->done = done;
    for (const auto& copy : lookup->copies) {
      shards_[copy.shard]->run(del_call(lookup->topic, lookup->id, plan.tomb, names_),
                               [deleting, lookup](const Result<const redisReply*>& reply) {
                                 // A copy that did not answer may still be there: say so.
                                 // Refused or not sent (kUnavailable) changed nothing: with
                                 // one copy that is a 503.
                                 if (!reply.is_ok() && deleting->status.is_ok()) {
                                   deleting->status =
                                       reply.status().code() == Code::kUnavailable &&
                                               lookup->copies.size() > 1
                                           ? Status(Code::kUnknown, reply.status().message() +
                                                                        "; delete outcome unknown")
                                           : reply.status();
                                 }
                                 // del.lua: {1, state} when it deleted the copy.
                                 const redisReply* r = reply.is_ok() ? *reply : nullptr;
                                 if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                                     reply_text(r->element[1]) == "w") {
                                   deleting->in_flight = true;
                                 }
                                 if (--deleting->left == 0) {
                                   deleting->done(deleting->status, deleting->in_flight);
                                 }
                               });
    }
  });
}

bool AsyncJobStore::usable(size_t shard) {
  return shards_[shard]->up() && !checker_.is_down(names_[shard]);
}

std::vector<ShardHealth> AsyncJobStore::health() const {
  std::vector<ShardHealth> result;
  for (const auto& shard : shards_) {
    const ShardAddress& address = shard->address();
    result.push_back({address.name(), shard->up(),
                      shard->up() ? std::string() : shard->last_error(),
                      address.is_sentinel() && !address.host.empty()
                          ? address.host + ":" + std::to_string(address.port)
                          : std::string()});
  }
  return result;
}

bool AsyncJobStore::first_connects_ended() const {
  return std::all_of(shards_.begin(), shards_.end(),
                     [](const auto& shard) { return shard->first_connect_ended(); });
}

size_t AsyncJobStore::pending() const {
  size_t total = 0;
  for (const auto& shard : shards_) {
    total += shard->pending();
  }
  for (const auto& confirm : confirms_) {
    total += confirm->pending();
  }
  return total;
}

}  // namespace dq
