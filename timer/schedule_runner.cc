// ScheduleRunner: step each schedule when its next tick is due (see
// schedule_runner.h).
#include "timer/schedule_runner.h"

#include <set>
#include <utility>

#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/store/placement.h"
#include "common/store/reply_values.h"

namespace dq {
namespace {

constexpr int64_t kScheduleRoundMs = 100;  // how often due schedules are looked for
constexpr int64_t kScheduleRecheckMs =
    5000;                              // a schedule's next tick is read again at least this often
constexpr int64_t kStepRetryMs = 500;  // after a failed step

using TickReply = Result<const redisReply*>;

}  // namespace

ScheduleRunner::ScheduleRunner(const Config& config, event_base* base, AsyncJobStore& store,
                               TopicCache& topics)
    : config_(config), store_(store), topics_(topics), roles_(roles_of(config)) {
  timer_.reset(evtimer_new(base, &ScheduleRunner::on_timer, this));
}

void ScheduleRunner::start() { round(); }

void ScheduleRunner::on_timer(evutil_socket_t /*fd*/, short /*events*/, void* self) {
  static_cast<ScheduleRunner*>(self)->round();
}

void ScheduleRunner::round() {
  if (stopping_) {
    return;
  }
  topics_.refresh_if_older(config_.registry_refresh_ms);
  int64_t now = monotonic_ms();
  int64_t redis_now = now_ms() + redis_ahead_ms_;
  std::set<std::string> listed;
  for (const auto& [name, topic] : topics_.all()) {
    for (const TopicSchedule& schedule : topic.schedules) {
      listed.insert(schedule.id);
      Known& known = known_[schedule.id];
      if (schedule.paused || known.busy || now < known.retry_at_ms) {
        continue;
      }
      if (!known.next_ms || *known.next_ms <= redis_now ||
          now - known.read_at_ms >= kScheduleRecheckMs) {
        step(Due{name, schedule, topic.tz});
      }
    }
  }
  for (auto it = known_.begin(); it != known_.end();) {
    it = listed.count(it->first) == 0 && !it->second.busy ? known_.erase(it) : std::next(it);
  }
  timeval wait{0, static_cast<suseconds_t>(kScheduleRoundMs * 1000)};
  evtimer_add(timer_.get(), &wait);
}

void ScheduleRunner::step(const Due& due) {
  auto homes = id_homes(store_.addresses(), roles_, schedule_home_key(due.topic, due.schedule.id));
  if (!homes) {
    return failed(due.schedule.id, Status(Code::kUnavailable, "no shard takes new jobs"));
  }
  size_t shard = homes->home;
  std::optional<size_t> previous = homes->previous;
  std::string next_home = homes->next ? store_.addresses()[*homes->next].name() : "";
  known_[due.schedule.id].busy = true;
  read_next(
      shard, due.schedule.id, [this, due, shard, previous, next_home](Result<ScheduleRead> read) {
        if (!read.is_ok()) {
          return failed(due.schedule.id, read.status());
        }
        if (!previous) {
          return planned(due, shard, next_home, *read);
        }
        // Its home is changing: its previous home may hold a later next
        // tick (the mover has not carried it yet, or a timer that still
        // placed it there moved it on).
        read_next(
            *previous, due.schedule.id,
            [this, due, shard, next_home, at_home = *read](Result<ScheduleRead> before) {
              if (!before.is_ok()) {
                return failed(due.schedule.id, before.status());
              }
              if (!before->next_ms || (at_home.next_ms && *at_home.next_ms >= *before->next_ms)) {
                return planned(due, shard, next_home, at_home);
              }
              carry(due.schedule.id, shard, *before->next_ms);
            });
      });
}

void ScheduleRunner::carry(const std::string& schedule_id, size_t shard, int64_t next_ms) {
  store_.connections()[shard]->run(
      schedule_carry_in_call(schedule_id, std::to_string(next_ms)),
      [this, schedule_id](TickReply reply) {
        if (!reply.is_ok()) {
          return failed(schedule_id, reply.status());
        }
        Known& known = known_[schedule_id];
        known.busy = false;
        known.next_ms.reset();  // stepped again at the next round, from its home
      });
}

void ScheduleRunner::read_next(size_t shard, const std::string& schedule_id,
                               std::function<void(Result<ScheduleRead>)> done) {
  store_.connections()[shard]->run(
      schedule_read_call(schedule_id), [this, done = std::move(done)](TickReply reply) {
        if (!reply.is_ok()) {
          return done(reply.status());
        }
        const redisReply* r = *reply;
        ScheduleRead read;
        int64_t next = 0;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            !reply_int(r->element[1], &read.now_ms)) {
          return done(Status(Code::kInternal, "unexpected reply to schedule_read"));
        }
        if (reply_int(r->element[0], &next)) {
          read.next_ms = next;
        }
        redis_ahead_ms_ = read.now_ms - now_ms();
        done(read);
      });
}

void ScheduleRunner::planned(const Due& due, size_t shard, const std::string& next_home,
                             const ScheduleRead& read) {
  const TopicSchedule& schedule = due.schedule;
  auto spec = parse_schedule(schedule, due.topic_tz);
  if (!spec.is_ok()) {
    return failed(schedule.id, spec.status());
  }
  Known& known = known_[schedule.id];
  if (read.next_ms && *read.next_ms > read.now_ms) {  // not due yet, by Redis's clock
    known.next_ms = read.next_ms;
    known.read_at_ms = monotonic_ms();
    known.busy = false;
    return;
  }
  ScriptCall call;
  int64_t next = 0;
  if (!read.next_ms) {  // a new schedule: its first tick is the first after now
    next = first_tick(*spec, read.now_ms);
    call = schedule_tick_call(due.topic, schedule.id, std::nullopt, next, 0, {}, next_home);
  } else {
    TickPlan plan = plan_tick(*spec, schedule.catch_up == "one", *read.next_ms, read.now_ms);
    std::vector<TickJob> jobs;
    for (int64_t tick : plan.job_ticks) {
      jobs.push_back(
          TickJob{due.topic, tick_job_id(schedule.id, tick), tick_body(schedule.body, tick), tick});
    }
    next = plan.next_ms;
    call = schedule_tick_call(due.topic, schedule.id, read.next_ms, next, plan.skipped, jobs,
                              next_home);
  }
  std::string id = schedule.id;
  store_.connections()[shard]->run(
      std::move(call), [this, id, next](TickReply reply) { finished(id, std::move(reply), next); });
}

// {verdict, detail} of schedule_tick.lua.
void ScheduleRunner::finished(const std::string& schedule_id, Result<const redisReply*> reply,
                              int64_t next_ms) {
  if (!reply.is_ok()) {
    return failed(schedule_id, reply.status());
  }
  const redisReply* r = *reply;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
    return failed(schedule_id, Status(Code::kInternal, "unexpected reply to schedule_tick"));
  }
  std::string verdict = reply_string(r->element[0]);
  std::string detail = reply_string(r->element[1]);
  if (verdict == "fenced") {
    return failed(schedule_id, Status(Code::kUnavailable, "the schedule's home is moving"));
  }
  Known& known = known_[schedule_id];
  int64_t stored = 0;
  if (verdict == "stale" || verdict == "early") {  // another timer moved it on
    known.next_ms =
        reply_int(r->element[1], &stored) ? std::optional<int64_t>(stored) : std::nullopt;
  } else {
    known.next_ms = next_ms;
    if (detail.find("exists|") != std::string::npos) {
      trouble_.note("schedule " + schedule_id + ": a job of this tick exists with another body");
    }
  }
  known.read_at_ms = monotonic_ms();
  known.busy = false;
  if (trouble_.active() && detail.find("exists|") == std::string::npos && trouble_.clear()) {
    err_log().info("schedules: ticks are added again");
  }
}

void ScheduleRunner::failed(const std::string& schedule_id, const Status& status) {
  Known& known = known_[schedule_id];
  known.busy = false;
  known.retry_at_ms = monotonic_ms() + kStepRetryMs;
  if (!stopping_) {
    trouble_.note("schedule " + schedule_id + ": " + status.message() + " (retrying every " +
                  std::to_string(kStepRetryMs) + " ms)");
  }
}

}  // namespace dq
