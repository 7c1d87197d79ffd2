// Implements common/store/shard_set.h. A deadline is a libevent timer owned
// by the ask's shared state; whichever comes first, the reply or the timer,
// answers, and the other is dropped. The reply's callback frees the timer,
// so the timer never outlives the state it points to.
#include "common/store/shard_set.h"

#include <algorithm>

#include "common/core/clock.h"

namespace dq {
namespace {

struct Ask {
  AsyncShard::ReplyCallback done;
  UniqueEvent deadline;
  bool answered = false;
  Code late = Code::kUnavailable;
  std::string shard;
  int64_t waited_ms = 0;
};

void on_deadline(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* self = static_cast<Ask*>(arg);
  self->deadline.reset();
  self->answered = true;
  std::string what = self->late == Code::kUnknown ? "; outcome unknown" : "";
  self->done(Status(self->late, "redis shard " + self->shard + " did not answer within " +
                                    std::to_string(self->waited_ms) + " ms" + what));
}

// Arms the deadline and returns the callback to hand to the shard.
AsyncShard::ReplyCallback with_deadline(const ShardSet& set, size_t index, int64_t deadline_ms,
                                        AsyncShard::ReplyCallback done, Code late,
                                        std::shared_ptr<Ask>* out) {
  auto ask = std::make_shared<Ask>();
  ask->done = std::move(done);
  ask->late = late;
  ask->shard = set.names[index];
  ask->waited_ms = std::max<int64_t>(0, deadline_ms - monotonic_ms());
  *out = ask;
  return [ask](Result<const redisReply*> reply) {
    ask->deadline.reset();
    if (ask->answered) {
      return;
    }
    ask->answered = true;
    ask->done(std::move(reply));
  };
}

void arm(const ShardSet& set, const std::shared_ptr<Ask>& ask) {
  if (ask->answered) {
    return;  // answered inside the send (shard down)
  }
  ask->deadline.reset(evtimer_new(set.base, &on_deadline, ask.get()));
  timeval wait{static_cast<time_t>(ask->waited_ms / 1000),
               static_cast<suseconds_t>(ask->waited_ms % 1000) * 1000};
  evtimer_add(ask->deadline.get(), &wait);
}

}  // namespace

int64_t deadline_after(int timeout_ms) { return monotonic_ms() + timeout_ms; }

void ask(const ShardSet& set, size_t index, const std::vector<std::string>& argv,
         int64_t deadline_ms, AsyncShard::ReplyCallback done, Code late) {
  std::shared_ptr<Ask> state;
  auto callback = with_deadline(set, index, deadline_ms, std::move(done), late, &state);
  set.shards[index]->command(argv, std::move(callback));
  arm(set, state);
}

void ask(const ShardSet& set, size_t index, ScriptCall call, int64_t deadline_ms,
         AsyncShard::ReplyCallback done, Code late) {
  std::shared_ptr<Ask> state;
  auto callback = with_deadline(set, index, deadline_ms, std::move(done), late, &state);
  set.shards[index]->run(std::move(call), std::move(callback));
  arm(set, state);
}

void ask_all(const ShardSet& set, size_t index,
             const std::vector<std::vector<std::string>>& commands, int64_t deadline_ms,
             std::function<void(size_t, const redisReply*)> each,
             std::function<void(Status)> done) {
  struct Batch {
    size_t left = 0;
    std::optional<Status> failed;
    std::function<void(size_t, const redisReply*)> each;
    std::function<void(Status)> done;
  };
  if (commands.empty()) {
    done(Status::ok());
    return;
  }
  auto batch = std::make_shared<Batch>();
  batch->left = commands.size();
  batch->each = std::move(each);
  batch->done = std::move(done);
  for (size_t k = 0; k < commands.size(); ++k) {
    ask(set, index, commands[k], deadline_ms, [batch, k](Result<const redisReply*> reply) {
      if (!reply.is_ok()) {
        if (!batch->failed) {
          batch->failed = reply.status();
        }
      } else if (!batch->failed) {
        batch->each(k, *reply);
      }
      if (--batch->left == 0) {
        batch->done(batch->failed ? *batch->failed : Status::ok());
      }
    });
  }
}

std::string joined_names(const ShardSet& set, const std::vector<size_t>& indexes) {
  std::string out;
  for (size_t index : indexes) {
    out += (out.empty() ? "" : ", ") + set.names[index];
  }
  return out;
}

OwnedShards::OwnedShards(event_base* base, const std::vector<ShardAddress>& addresses,
                         int connect_timeout_ms, int command_timeout_ms) {
  set_.base = base;
  set_.timeout_ms = command_timeout_ms;
  for (const auto& address : addresses) {
    owned_.push_back(
        std::make_unique<AsyncShard>(base, address, connect_timeout_ms, command_timeout_ms));
    set_.shards.push_back(owned_.back().get());
    set_.names.push_back(address.name());
  }
  for (auto& shard : owned_) {
    shard->start();
  }
}

OwnedShards::OwnedShards(event_base* base, const Config& config)
    : OwnedShards(base, config.shards, config.redis_connect_timeout_ms,
                  config.redis_command_timeout_ms) {}

OwnedShards::~OwnedShards() {
  check_.reset();
  // Commands still waiting fail now, while everything they point to exists.
  for (auto& shard : owned_) {
    shard->stop();
  }
}

bool OwnedShards::first_connects_ended() const {
  return std::all_of(owned_.begin(), owned_.end(),
                     [](const auto& shard) { return shard->first_connect_ended(); });
}

void OwnedShards::when_connected(std::function<void()> done) {
  if (first_connects_ended()) {
    done();
    return;
  }
  connected_ = std::move(done);
  if (check_ == nullptr) {
    check_.reset(event_new(set_.base, -1, EV_PERSIST, &OwnedShards::on_check, this));
  }
  timeval every{0, 5000};
  event_add(check_.get(), &every);
}

void OwnedShards::on_check(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* self = static_cast<OwnedShards*>(arg);
  if (!self->first_connects_ended()) {
    return;
  }
  event_del(self->check_.get());
  auto done = std::move(self->connected_);
  self->connected_ = nullptr;
  if (done) {
    done();
  }
}

}  // namespace dq
