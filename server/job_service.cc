// JobService (server/job_service.h): adds with a cross-shard duplicate check,
// and lookups / deletes that walk the shards in placement order.
#include "server/job_service.h"

#include "common/clock.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/script_calls.h"

namespace dq {
namespace {

std::string reply_text(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS)
    return std::string(reply->str, reply->len);
  return {};
}

std::string conflict_message(const std::string& topic, const std::string& id,
                             const std::string& state) {
  std::string name = topic + "/" + id;
  if (state == "x") return "job " + name + " is in the dead-letter set; requeue or purge it first";
  Job probe;
  std::string record = state + "|0|0|0|";
  const char* state_text = parse_job_record(record, &probe) ? state_name(probe.state) : "pending";
  return "job " + name + " is already pending (" + state_text + ")";
}

// Not found on any shard that answered: 404, unless a down shard may hold it.
Status missing_job(const std::string& topic, const std::string& id, bool saw_down) {
  if (saw_down) {
    return Status(Code::kUnavailable, "job " + topic + "/" + id +
                                          " is not on any reachable shard, and a shard is down");
  }
  return Status(Code::kNotFound, "job " + topic + "/" + id + " not found");
}

}  // namespace

// One add in progress: first the other shards are asked whether they hold the
// id (a job may sit on a fallback shard, or on its old home after a shard was
// added), then the add script runs on the target shard.
struct JobService::AddState {
  AddRequest request;
  size_t target = 0;
  size_t checks_left = 0;
  bool conflict = false;
  std::function<void(Result<int64_t>)> done;
};

JobService::JobService(event_base* base, const Config& config) : addresses_(config.shards) {
  for (const auto& address : addresses_) {
    shards_.push_back(std::make_unique<AsyncShard>(base, address, config.redis_connect_timeout_ms,
                                                   config.redis_command_timeout_ms));
  }
}

void JobService::start() {
  for (auto& shard : shards_) shard->start();
}

void JobService::shutdown() {
  // A callback that moves on to a later shard (get, del) may send there; that
  // shard's own stop() below fails it in turn, so nothing is left waiting.
  for (auto& shard : shards_) shard->stop();
}

void JobService::add(const AddRequest& request, std::function<void(Result<int64_t>)> done) {
  std::vector<size_t> order = shard_order(addresses_, job_key(request.topic, request.id));
  auto state = std::make_shared<AddState>();
  state->request = request;
  state->done = std::move(done);
  bool found_target = false;
  std::vector<size_t> others;
  for (size_t index : order) {
    if (!shards_[index]->up()) continue;
    if (!found_target) {
      state->target = index;
      found_target = true;
    } else {
      others.push_back(index);
    }
  }
  if (!found_target) {
    state->done(Status(Code::kUnavailable, "no Redis shard can take the job: every shard is down"));
    return;
  }
  auto run_add = [this, state]() {
    if (state->conflict) {
      state->done(Status(Code::kConflict, "job " + state->request.topic + "/" + state->request.id +
                                              " is already pending on another shard"));
      return;
    }
    const AddRequest& r = state->request;
    shards_[state->target]->run(
        add_call(r.topic, r.id, r.due_ms, now_ms(), r.body),
        [state](Result<const redisReply*> reply) {
          if (!reply.is_ok()) {
            state->done(reply.status());
          } else if ((*reply)->type == REDIS_REPLY_INTEGER && (*reply)->integer == 1) {
            state->done(state->request.due_ms);
          } else {
            state->done(Status(
                Code::kConflict,
                conflict_message(state->request.topic, state->request.id, reply_text(*reply))));
          }
        });
  };
  if (others.empty()) {
    run_add();
    return;
  }
  state->checks_left = others.size();
  std::string key = job_key(request.topic, request.id);
  for (size_t index : others) {
    // A shard that fails the check is treated as not holding the job: it is
    // down, and the add must not wait for it.
    shards_[index]->command(
        {"HEXISTS", keys::jobs(), key}, [state, run_add](Result<const redisReply*> reply) {
          if (reply.is_ok() && (*reply)->type == REDIS_REPLY_INTEGER && (*reply)->integer == 1)
            state->conflict = true;
          if (--state->checks_left == 0) run_add();
        });
  }
}

size_t JobService::skip_down_shards(const std::vector<size_t>& order, size_t next,
                                    bool* saw_down) const {
  while (next < order.size() && !shards_[order[next]]->up()) {
    *saw_down = true;
    ++next;
  }
  return next;
}

void JobService::get(const std::string& topic, const std::string& id,
                     std::function<void(Result<Job>)> done) {
  find_job(topic, id, shard_order(addresses_, job_key(topic, id)), 0, false, std::move(done));
}

void JobService::find_job(const std::string& topic, const std::string& id,
                          std::vector<size_t> order, size_t next, bool saw_down,
                          std::function<void(Result<Job>)> done) {
  next = skip_down_shards(order, next, &saw_down);
  if (next == order.size()) {
    done(missing_job(topic, id, saw_down));
    return;
  }
  AsyncShard* shard = shards_[order[next]].get();
  std::string key = job_key(topic, id);
  shard->command({"HGET", keys::jobs(), key}, [=, done = std::move(done)](
                                                  Result<const redisReply*> reply) mutable {
    if (!reply.is_ok() || (*reply)->type != REDIS_REPLY_STRING) {
      find_job(topic, id, std::move(order), next + 1, saw_down || !reply.is_ok(), std::move(done));
      return;
    }
    Job job;
    job.topic = topic;
    job.id = id;
    if (!parse_job_record(reply_text(*reply), &job)) {
      done(Status(Code::kInternal, "job " + topic + "/" + id + " has a malformed record"));
      return;
    }
    if (job.state != JobState::kRetrying && job.state != JobState::kDead) {
      done(std::move(job));
      return;
    }
    shard->command({"HGET", keys::errors(), key},
                   [job, done = std::move(done)](Result<const redisReply*> error) mutable {
                     if (error.is_ok() && (*error)->type == REDIS_REPLY_STRING)
                       parse_error_entry(reply_text(*error), &job);
                     done(std::move(job));
                   });
  });
}

void JobService::del(const std::string& topic, const std::string& id,
                     std::function<void(Status)> done) {
  del_from(topic, id, shard_order(addresses_, job_key(topic, id)), 0, false, std::move(done));
}

void JobService::del_from(const std::string& topic, const std::string& id,
                          std::vector<size_t> order, size_t next, bool saw_down,
                          std::function<void(Status)> done) {
  next = skip_down_shards(order, next, &saw_down);
  if (next == order.size()) {
    done(missing_job(topic, id, saw_down));
    return;
  }
  shards_[order[next]]->run(
      del_call(topic, id, now_ms()),
      [=, done = std::move(done)](Result<const redisReply*> reply) mutable {
        if (reply.is_ok() && (*reply)->type == REDIS_REPLY_INTEGER && (*reply)->integer == 1) {
          done(Status::ok());
          return;
        }
        del_from(topic, id, std::move(order), next + 1, saw_down || !reply.is_ok(),
                 std::move(done));
      });
}

std::vector<ShardHealth> JobService::health() const {
  std::vector<ShardHealth> result;
  for (const auto& shard : shards_) {
    result.push_back(
        {shard->address().name(), shard->up(), shard->up() ? std::string() : shard->last_error()});
  }
  return result;
}

size_t JobService::pending() const {
  size_t total = 0;
  for (const auto& shard : shards_) total += shard->pending();
  return total;
}

}  // namespace dq
