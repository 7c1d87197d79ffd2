// AsyncJobStore (common/store/async_job_store.h): adds, lookups and deletes
// by id, each asking the id's home (common/store/placement.h). The timer's
// and consumer's calls are in async_job_leases.cc.
#include "common/store/async_job_store.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/core/log.h"
#include "common/store/dependencies.h"
#include "common/store/fence.h"
#include "common/store/job_meta.h"
#include "common/store/job_records.h"
#include "common/store/keys.h"
#include "common/store/reply_values.h"
#include "common/store/script_calls.h"
#include "common/store/shard_reasons.h"

namespace dq {
namespace {

// How long an add waits for an id's other home (previous or next, while
// the shard list changes) to say whether it holds the id, so a stalled
// shard costs such adds at most this much while it is not yet marked down.
constexpr int kProbeFloorMs = 50;

std::string reply_text(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    return std::string(reply->str, reply->len);
  }
  return {};
}

std::string job_name(const std::string& topic, const std::string& id) {
  return "job " + topic + "/" + id;
}

Status no_home(const std::string& topic, const std::string& id) {
  return Status(Code::kUnavailable, job_name(topic, id) +
                                        ": no Redis shard takes new jobs (every shard is "
                                        "draining or drained); nothing was written");
}

// Not found on any shard asked: 404, unless one that may hold it (`down`,
// why it could not be asked) did not answer.
Status missing_job(const std::string& topic, const std::string& id, const std::string& down) {
  if (!down.empty()) {
    return Status(Code::kUnavailable, job_name(topic, id) +
                                          " is not on a shard that answered, and the shard that "
                                          "may hold it cannot be asked: " +
                                          down + "; retry later");
  }
  return Status(Code::kNotFound, job_name(topic, id) + " not found");
}

}  // namespace

// One add in progress: its homes, and the request it answers.
struct AsyncJobStore::AddState {
  AddRequest request;
  IdHomes homes;
  AsyncJobStore::AddDone done;

  void finish(Result<Added> added) { done(request, std::move(added)); }
};

AsyncJobStore::AsyncJobStore(event_base* base, const Config& config)
    : addresses_(config.shards),
      names_(shard_names(config.shards)),
      roles_(roles_of(config)),
      probe_timeout_ms_(std::max(kProbeFloorMs, config.redis_probe_timeout_ms)),
      command_timeout_ms_(config.redis_command_timeout_ms),
      checker_(config.pid_file),
      batcher_(base) {
  for (const auto& address : addresses_) {
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
  // A callback that moves on to a later shard (get, delete) may send there;
  // that shard's own stop() below fails it in turn, so nothing is left waiting.
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
  const AddRequest& r = state->request;
  auto homes = id_homes(addresses_, roles_, job_key(r.topic, r.id));
  if (!homes) {
    return state->finish(no_home(r.topic, r.id));
  }
  state->homes = *homes;
  // Every shard that may hold the id must answer, or the add could make a
  // second copy: refused at once (503), nothing written.
  for (size_t shard : homes->asked()) {
    if (!usable(shard)) {
      return state->finish(Status(Code::kUnavailable, job_name(r.topic, r.id) +
                                                          " not added: " + down_reason(shard) +
                                                          "; nothing was written, retry later"));
    }
  }
  if (!r.after.empty()) {
    return register_waiter(state);
  }
  look_elsewhere(std::move(state), 0);
}

void AsyncJobStore::register_waiter(const std::shared_ptr<AddState>& state) {
  const AddRequest& r = state->request;
  // Each awaited job's homes (while the shard list changes, every shard
  // that may hold it): the shard it ends on finds the registration.
  // Per shard: the keys whose home it is, then those it may hold as their
  // previous or next home (registered there only if the job is there).
  struct Keys {
    std::vector<std::string> home, elsewhere;
  };
  std::map<size_t, Keys> per_shard;
  std::vector<std::string> awaited;
  for (const JobRef& dep : r.after) {
    std::string key = job_key(dep.topic, dep.id);
    auto homes = id_homes(addresses_, roles_, key);
    if (!homes) {
      return state->finish(no_home(dep.topic, dep.id));
    }
    for (size_t shard : homes->lookup_order()) {
      if (!usable(shard)) {
        return state->finish(Status(
            Code::kUnavailable, job_name(r.topic, r.id) + " not added: " + down_reason(shard) +
                                    " (it holds the job it waits for, " + dep.topic + "/" + dep.id +
                                    "); nothing was added, retry later"));
      }
      Keys& there = per_shard[shard];
      (shard == homes->home ? there.home : there.elsewhere).push_back(key);
    }
    awaited.push_back(std::move(key));
  }
  // Per awaited key: 2 delivered, 1 ended otherwise, 0 waits (the most any
  // of its shards said).
  struct Registration {
    size_t left = 0;
    std::map<std::string, int> verdict;
    Status failed;
  };
  auto reg = std::make_shared<Registration>();
  reg->left = per_shard.size();
  const std::string waiter = job_key(r.topic, r.id);
  for (auto& [shard, keys] : per_shard) {
    std::vector<std::string> keys_there = keys.home;
    keys_there.insert(keys_there.end(), keys.elsewhere.begin(), keys.elsewhere.end());
    shards_[shard]->run(dep_register_call(waiter, keys.home, keys.elsewhere),
                        [this, state, reg, awaited, keys_there = std::move(keys_there),
                         shard = shard](const Result<const redisReply*>& reply) {
                          if (!reply.is_ok()) {
                            if (reg->failed.is_ok()) {
                              reg->failed = reply.status();
                            }
                          } else if ((*reply)->type != REDIS_REPLY_ARRAY ||
                                     (*reply)->elements != keys_there.size()) {
                            reg->failed = unexpected(shard, "dep_register");
                          } else {
                            for (size_t i = 0; i < keys_there.size(); ++i) {
                              std::string said = reply_text((*reply)->element[i]);
                              int rank = said == "delivered" ? 2 : said == "ended" ? 1 : 0;
                              int& verdict = reg->verdict[keys_there[i]];
                              verdict = std::max(verdict, rank);
                            }
                          }
                          if (--reg->left > 0) {
                            return;
                          }
                          const AddRequest& r = state->request;
                          if (!reg->failed.is_ok()) {
                            return state->finish(Status(
                                Code::kUnavailable,
                                job_name(r.topic, r.id) +
                                    " not added: registering it with the jobs it waits "
                                    "for failed (" +
                                    reg->failed.message() + "); nothing was added, retry later"));
                          }
                          std::string kept;
                          std::set<std::string> seen;
                          for (const std::string& key : awaited) {
                            if (reg->verdict[key] == 2 || !seen.insert(key).second) {
                              continue;  // delivered already: it does not wait for it
                            }
                            kept += (kept.empty() ? "" : "\n") + key;
                          }
                          state->request.after_keys = std::move(kept);
                          look_elsewhere(state, 0);
                        });
  }
}

void AsyncJobStore::look_elsewhere(std::shared_ptr<AddState> state, size_t next) {
  std::vector<size_t> asked = state->homes.asked();
  if (next + 1 >= asked.size()) {
    run_add(std::move(state));
    return;
  }
  size_t other = asked[next + 1];
  const std::string key = job_key(state->request.topic, state->request.id);
  // The previous home is fenced for this add's home as it is asked: from
  // then on it refuses the id from a host that has not seen the change yet.
  auto argv = state->homes.previous == other
                  ? fenced_record_read_argv(key, names_[state->homes.home])
                  : record_read_argv(key);
  shards_[other]->probe(
      argv, probe_timeout_ms_, [this, state, other, next](Result<const redisReply*> reply) {
        const AddRequest& r = state->request;
        if (!reply.is_ok()) {
          // A look writes no job (the fence is a name in a set): nothing written.
          return state->finish(Status(
              Code::kUnavailable, job_name(r.topic, r.id) + " not added: shard " + names_[other] +
                                      ", which may hold it while the shard list changes, did "
                                      "not answer (" +
                                      reply.status().message() +
                                      "); nothing was written, retry later"));
        }
        Job found;
        found.topic = r.topic;
        found.id = r.id;
        const std::string record = reply_text(*reply);
        if ((*reply)->type != REDIS_REPLY_STRING || !parse_job_meta(record, &found)) {
          look_elsewhere(state, next + 1);
          return;
        }
        // Held there: the same body is a retried add.
        if (body_is_inline(record)) {
          return state->finish(read_copy_elsewhere(found, found.body, r.body, names_[other]));
        }
        shards_[other]->command(
            {"HGET", keys::bodies(), job_key(r.topic, r.id)},
            [this, state, found, other](Result<const redisReply*> body) {
              if (!body.is_ok()) {
                return state->finish(
                    Status(Code::kUnavailable, body.status().message() + "; nothing was written"));
              }
              std::optional<std::string_view> stored;
              if ((*body)->type == REDIS_REPLY_STRING) {
                stored = std::string_view((*body)->str, (*body)->len);
              }
              state->finish(read_copy_elsewhere(found, stored, state->request.body, names_[other]));
            });
      });
}

void AsyncJobStore::run_add(std::shared_ptr<AddState> state) {
  size_t home = state->homes.home;
  std::string next_home = state->homes.next ? names_[*state->homes.next] : std::string();
  AsyncShard* writer = confirms_.empty() ? shards_[home].get() : &confirms_[home]->connection();
  const AddRequest& request = state->request;  // the callback below keeps `state` alive
  batcher_.add(
      writer, next_home, request,
      [this, state = std::move(state), home](Result<const redisReply*> reply, size_t index) {
        const AddRequest& r = state->request;
        if (reply.is_ok()) {
          Result<Added> added = read_add_reply(*reply, index, r.topic, r.id);
          if (confirms_.empty() || !added.is_ok()) {
            return state->finish(std::move(added));
          }
          // Also for a retried add (existing): its answer waits for the
          // replicas too, so a retry after a replication_timeout confirms.
          confirms_[home]->confirm([state, added](const Status& replicated) {
            state->finish(replicated.is_ok() ? added : Result<Added>(replicated));
          });
        } else if (reply.status().code() == Code::kUnavailable) {
          // Not sent (the shard went down a moment ago) or refused (full,
          // read-only...): nothing written. No other shard takes its ids.
          state->finish(Status(Code::kUnavailable, job_name(r.topic, r.id) +
                                                       " not added: " + reply.status().message() +
                                                       "; nothing was written, retry later"));
        } else {
          state->finish(reply.status());  // kUnknown: 504, the client may retry safely
        }
      });
}

void AsyncJobStore::get(const std::string& topic, const std::string& id,
                        std::function<void(Result<Job>)> done) {
  auto homes = id_homes(addresses_, roles_, job_key(topic, id));
  if (!homes) {
    done(no_home(topic, id));
    return;
  }
  find_job(topic, id, homes->lookup_order(), homes->home, 0, "", std::move(done));
}

void AsyncJobStore::get_ended(const std::string& topic, const std::string& id,
                              std::function<void(std::optional<EndedJob>)> done) {
  auto homes = id_homes(addresses_, roles_, job_key(topic, id));
  if (!homes) {
    return done(std::nullopt);
  }
  // While a shard joins or drains, a job may have ended on its previous
  // home, and a job of the id added since on its home: both are asked, and
  // the later end answers (as ended_carry_in.lua keeps it).
  find_ended(topic, id, homes->lookup_order(), homes->home, 0, std::nullopt, std::move(done));
}

void AsyncJobStore::find_ended(const std::string& topic, const std::string& id,
                               std::vector<size_t> order, size_t home, size_t next,
                               std::optional<EndedJob> latest,
                               std::function<void(std::optional<EndedJob>)> done) {
  while (next < order.size() && !usable(order[next])) {
    ++next;
  }
  if (next == order.size()) {
    if (latest) {
      latest->topic = topic;
      latest->id = id;
    }
    return done(std::move(latest));
  }
  size_t index = order[next];
  int timeout_ms = index == home ? command_timeout_ms_ : probe_timeout_ms_;  // as find_job
  shards_[index]->probe(
      {"GET", keys::ended(job_key(topic, id))}, timeout_ms,
      [this, topic, id, order = std::move(order), home, next, latest = std::move(latest),
       done = std::move(done)](Result<const redisReply*> reply) mutable {
        if (reply.is_ok() && (*reply)->type == REDIS_REPLY_STRING) {
          auto ended = parse_ended_record(reply_text(*reply));
          if (ended && (!latest || ended->ended_at_ms > latest->ended_at_ms)) {
            latest = std::move(ended);
          }
        }
        find_ended(topic, id, std::move(order), home, next + 1, std::move(latest), std::move(done));
      });
}

void AsyncJobStore::find_job(const std::string& topic, const std::string& id,
                             std::vector<size_t> order, size_t home, size_t next, std::string down,
                             std::function<void(Result<Job>)> done) {
  while (next < order.size() && !usable(order[next])) {
    if (down.empty()) {
      down = down_reason(order[next]);
    }
    ++next;
  }
  if (next == order.size()) {
    done(missing_job(topic, id, down));
    return;
  }
  size_t index = order[next];
  // The id's home gets the command timeout, as any command to it; only its
  // previous or next home (while a shard joins or drains) is asked for at
  // most probe_timeout_ms.
  int timeout_ms = index == home ? command_timeout_ms_ : probe_timeout_ms_;
  shards_[index]->probe(
      record_read_argv(job_key(topic, id)), timeout_ms,
      [=, done = std::move(done)](Result<const redisReply*> reply) mutable {
        if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_STRING) {
          if (!reply.is_ok() && down.empty()) {
            down = reply.status().message();
          }
          find_job(topic, id, std::move(order), home, next + 1, std::move(down), std::move(done));
          return;
        }
        Job job;
        job.topic = topic;
        job.id = id;
        const std::string record = reply_text(*reply);
        if (!parse_job_meta(record, &job)) {
          done(Status(Code::kInternal, job_name(topic, id) + " has a malformed record"));
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
  if (job.state == JobState::kWaiting) {
    // What it still waits for ({dq}:after: keys, '\n'-joined).
    redis->command({"HGET", keys::after(), job_key(job.topic, job.id)},
                   [job, done = std::move(done)](Result<const redisReply*> after) mutable {
                     if (after.is_ok() && (*after)->type == REDIS_REPLY_STRING) {
                       job.after = split_after_keys(reply_text(*after));
                     }
                     done(std::move(job));  // never attempted: no last error
                   });
    return;
  }
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

// One delete in progress: the shards it asks in turn, and what they said.
// A script run on the job wherever it is: its homes in lookup order, until
// one answers that it held the job ({1 or more, ...}; {0, ...}: not here).
struct AsyncJobStore::JobWrite {
  std::string topic;
  std::string id;
  const char* verb = "";  // "delete", "run": for the messages
  ScriptCall call;
  std::vector<size_t> order;
  std::string down;  // why a shard that may hold it could not be asked (503)
  Status unknown;    // a call sent that got no answer (504)
  WriteDone done;
};

void AsyncJobStore::write_where_found(const std::string& topic, const std::string& id,
                                      const char* verb, ScriptCall call, WriteDone done) {
  auto homes = id_homes(addresses_, roles_, job_key(topic, id));
  if (!homes) {
    done(no_home(topic, id), nullptr);
    return;
  }
  auto write = std::make_shared<JobWrite>();
  write->topic = topic;
  write->id = id;
  write->verb = verb;
  write->call = std::move(call);
  write->order = homes->lookup_order();
  write->done = std::move(done);
  write_from(write, 0);
}

void AsyncJobStore::write_from(const std::shared_ptr<JobWrite>& write, size_t next) {
  while (next < write->order.size() && !usable(write->order[next])) {
    if (write->down.empty()) {
      write->down = down_reason(write->order[next]);
    }
    ++next;
  }
  if (next == write->order.size()) {
    // Found nowhere. A call whose answer did not come may have run: 504;
    // else a shard that may hold it could not be asked: 503, nothing changed.
    if (!write->unknown.is_ok()) {
      return write->done(write->unknown, nullptr);
    }
    if (!write->down.empty()) {
      return write->done(
          Status(Code::kUnavailable, std::string("cannot ") + write->verb + " " +
                                         job_name(write->topic, write->id) + ": " + write->down +
                                         "; nothing was changed, retry later"),
          nullptr);
    }
    return write->done(Status(Code::kNotFound, job_name(write->topic, write->id) + " not found"),
                       nullptr);
  }
  size_t shard = write->order[next];
  shards_[shard]->run(write->call, [this, write, next](const Result<const redisReply*>& reply) {
    if (!reply.is_ok()) {
      if (reply.status().code() == Code::kUnavailable) {
        // Refused or not sent: nothing changed there.
        if (write->down.empty()) {
          write->down = reply.status().message();
        }
      } else if (write->unknown.is_ok()) {
        write->unknown = Status(reply.status().code(),
                                reply.status().message() + "; " + write->verb + " outcome unknown");
      }
      write_from(write, next + 1);
      return;
    }
    const redisReply* r = *reply;
    bool found = r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
                 r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer != 0;
    if (!found) {
      write_from(write, next + 1);
      return;
    }
    // One pending job per id: once found, no other shard holds it (a copy
    // the mover wrote on its home meanwhile is dropped by it).
    write->done(Status::ok(), r);
  });
}

void AsyncJobStore::del(const std::string& topic, const std::string& id, DelDone done,
                        int64_t keep_ms) {
  write_where_found(topic, id, "delete", del_call(topic, id, keep_ms),
                    [done = std::move(done)](const Status& status, const redisReply* reply) {
                      // del.lua: {1, state} when it deleted the job.
                      done(status, reply != nullptr && reply_text(reply->element[1]) == "w");
                    });
}

void AsyncJobStore::run_now(const std::string& topic, const std::string& id,
                            std::function<void(Result<RunNow>)> done) {
  write_where_found(
      topic, id, "run", run_now_call(topic, id),
      [topic, id, done = std::move(done)](const Status& status, const redisReply* reply) {
        if (!status.is_ok()) {
          return done(status);
        }
        // run_now.lua: {1 made due now | 2 due already | 3 dead | 4 being moved, state
        // letter, due ms}.
        RunNow result;
        JobState state = JobState::kDelayed;
        std::string letter = reply->elements == 3 ? reply_text(reply->element[1]) : "";
        if (letter.size() != 1 || !state_of_letter(letter[0], &state) ||
            !reply_int(reply->element[2], &result.due_ms)) {
          return done(Status(Code::kInternal, "unexpected reply to run"));
        }
        if (reply->element[0]->integer == 3) {
          return done(Status(Code::kConflict, job_name(topic, id) +
                                                  " is in the dead-letter set; requeue it to "
                                                  "run it again"));
        }
        if (reply->element[0]->integer == 4) {
          return done(Status(Code::kUnavailable,
                             job_name(topic, id) +
                                 " is being moved to another shard; nothing was changed, retry "
                                 "shortly"));
        }
        result.state = state;
        result.moved = reply->element[0]->integer == 1;
        done(result);
      });
}

void AsyncJobStore::update(UpdateRequest request, std::function<void(Result<Updated>)> done) {
  update_once(std::make_shared<UpdateRequest>(std::move(request)), false, std::move(done));
}

void AsyncJobStore::update_once(const std::shared_ptr<UpdateRequest>& request, bool retried,
                                std::function<void(Result<Updated>)> done) {
  const UpdateRequest& r = *request;
  write_where_found(
      r.topic, r.id, "update",
      update_call(r.topic, r.id, r.body ? &*r.body : nullptr, r.due, r.expiry),
      [this, request, retried, done = std::move(done)](const Status& status,
                                                       const redisReply* reply) {
        const UpdateRequest& r = *request;
        if (status.code() == Code::kNotFound && !retried) {
          if (!r.body) {
            return done(Status(Code::kInvalid, job_name(r.topic, r.id) +
                                                   " not found; an update that adds it needs a "
                                                   "body"));
          }
          // No such job: the update is an add, with the add's answers.
          AddRequest add{r.topic,
                         r.id,
                         *r.body,
                         r.due ? *r.due : r.add_due,
                         r.expiry ? *r.expiry : r.add_expiry,
                         {},
                         {}};
          return this->add(std::move(add),
                           [this, request, done](const AddRequest&, Result<Added> added) {
                             if (!added.is_ok()) {
                               if (added.status().code() == Code::kConflict) {
                                 // Added meanwhile with another body: update that one.
                                 return update_once(request, true, done);
                               }
                               return done(added.status());
                             }
                             if (added->existing && added->ended.empty()) {
                               // Added meanwhile with this body: update it (the due time may
                               // differ).
                               return update_once(request, true, done);
                             }
                             Updated out;
                             out.created = !added->existing;
                             out.due_ms = added->due_ms;
                             out.ended = added->ended;
                             out.ended_at_ms = added->ended_at_ms;
                             done(out);
                           });
        }
        if (!status.is_ok()) {
          return done(status);
        }
        // update.lua: {1 updated | 3 dead | 4 being moved | 5 expires before due | 6 waiting, state
        // letter, due ms, incarnation (5: when it expires)}.
        Updated result;
        int64_t kind = reply->element[0]->integer;
        std::string letter = reply->elements == 4 ? reply_text(reply->element[1]) : "";
        if (letter.size() != 1 || !state_of_letter(letter[0], &result.previous) ||
            !reply_int(reply->element[2], &result.due_ms)) {
          return done(Status(Code::kInternal, "unexpected reply to update"));
        }
        if (kind == 3) {
          return done(Status(Code::kConflict, job_name(r.topic, r.id) +
                                                  " is in the dead-letter set; requeue it, or "
                                                  "delete it and add it again"));
        }
        if (kind == 6) {
          return done(Status(Code::kConflict,
                             job_name(r.topic, r.id) +
                                 " waits for the jobs its add named in \"after\"; nothing was "
                                 "changed: delete it and add it again, or run it now (it stops "
                                 "waiting)"));
        }
        if (kind == 4) {
          return done(Status(Code::kUnavailable,
                             job_name(r.topic, r.id) +
                                 " is being moved to another shard; nothing was changed, retry "
                                 "shortly"));
        }
        if (kind == 5) {
          return done(Status(
              Code::kInvalid,
              job_name(r.topic, r.id) + " expires at " + reply_text(reply->element[3]) +
                  " (epoch ms), at or before its new due time " + std::to_string(result.due_ms) +
                  "; nothing was changed: give a ttl or expire_at with it"));
        }
        result.incarnation = reply_text(reply->element[3]);
        done(result);
      });
}

std::string AsyncJobStore::down_reason(size_t shard) {
  return shard_down_reason(*shards_[shard], checker_);
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
