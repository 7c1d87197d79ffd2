// Pull workers' reserve, ack, nack and touch (see pull_queue.h).
#include "server/pull_queue.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <random>

#include "common/core/clock.h"
#include "common/core/host_name.h"
#include "common/core/json_big_numbers.h"
#include "common/core/json_span.h"
#include "common/core/late_policy.h"
#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "common/http/http_request.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/retry_policy.h"
#include "common/registry/topic_caps.h"
#include "common/store/end_memory.h"
#include "server/http_reply.h"
#include "server/job_request.h"

namespace dq {
namespace {

constexpr int64_t kTickMs = 50;          // waits' deadlines and gone clients
constexpr int64_t kRecheckMs = 5000;     // the backstop for a lost publish
constexpr int64_t kRecheckDownMs = 500;  // while a shard's subscription is off
constexpr int64_t kMostBytes = 8 << 20;  // bodies of one shard's reserve, at most
constexpr int kDefaultTtrS = 30;
constexpr int kMaxTtrS = 86400;
constexpr int kMaxWaitS = 60;
constexpr int kMaxCount = 100;
constexpr int64_t kMaxNackDelayS = 315360000;  // ten years
constexpr size_t kMaxErrorBytes = 2048;

// One query parameter as a whole number from..to; fallback when absent.
// false after filling *error.
bool query_number(const std::string& query, const char* name, int64_t fallback, int64_t from,
                  int64_t to, const char* unit, int64_t* out, std::string* error) {
  std::string text = query_value(query, name);
  if (text.empty()) {
    *out = fallback;
    return true;
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < from || value > to) {
    *error = std::string(name) + ": '" + text.substr(0, 32) + "' must be a whole number of " +
             unit + " from " + std::to_string(from) + " to " + std::to_string(to);
    return false;
  }
  *out = value;
  return true;
}

std::string make_token(const ReservedJob& job, int ttr_s, const std::string& shard) {
  return std::to_string(job.job.attempts) + ":" + std::to_string(ttr_s) + ":" +
         job.lease.incarnation + "|" + job.lease.reserve_id + "|" + shard;
}

bool parse_token(const std::string& text, PullToken* token) {
  size_t first = text.find('|');
  size_t second = first == std::string::npos ? first : text.find('|', first + 1);
  if (second == std::string::npos || second + 1 >= text.size()) {
    return false;
  }
  std::string head = text.substr(0, first);
  size_t a = head.find(':');
  size_t b = a == std::string::npos ? a : head.find(':', a + 1);
  if (b == std::string::npos) {
    return false;
  }
  auto number = [](std::string_view part, int* out) {
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), *out);
    return ec == std::errc() && end == part.data() + part.size() && *out >= 0;
  };
  std::string_view view(head);
  if (!number(view.substr(0, a), &token->attempt) ||
      !number(view.substr(a + 1, b - a - 1), &token->ttr_s) || b + 1 >= head.size()) {
    return false;
  }
  token->lease.incarnation = head.substr(b + 1);
  token->lease.reserve_id = text.substr(first + 1, second - first - 1);
  token->shard = text.substr(second + 1);
  return !token->lease.reserve_id.empty();
}

std::string error_json(const std::string& message) { return dump_json(Json{{"error", message}}); }

// dq_pull_<what>_total{topic} (server/metrics_page.cc).
void count_pull(const std::string& topic, const char* what, uint64_t n = 1) {
  if (n > 0) {
    SharedMetrics::instance().add(SharedMetrics::key({"pull", topic, what}), n);
  }
}

std::string mode_push_error(const std::string& topic) {
  return "topic " + topic + " is mode push: its jobs are delivered to its callback, not reserved";
}

std::string stale_error(const std::string& why) {
  return "stale token: " + why + "; nothing changed";
}

}  // namespace

struct PullQueue::Wait {
  Exchange request;
  std::string topic;
  int ttr_s = kDefaultTtrS;
  int count = 1;
  int64_t deadline_ms = 0;    // monotonic: answered empty then
  int64_t recheck_at_ms = 0;  // monotonic: asked again then, publish or not
  bool asking = false;
  bool woken = false;   // a publish came while it was asking: ask again
  bool listed = false;  // in waits_
  std::string reserve_id;
  size_t first = 0;  // the shard asked first this round
  std::vector<ReservedJob> jobs;
  int64_t redis_now_ms = 0;
  int allowed = -1;  // a capped topic: jobs its caps allow this round (-1: no caps)
};

PullQueue::PullQueue(event_base* base, AsyncJobStore& jobs, TopicCache& topics,
                     const Config& config, Answer answer)
    : base_(base),
      jobs_(jobs),
      topics_(topics),
      config_(config),
      answer_(std::move(answer)),
      alerts_(config.sqlite_path),
      feed_(base, jobs.connections(), [this](const std::string& topic) { ready(topic); }),
      caps_(jobs),
      answered_(jobs.shard_count()) {
  std::random_device random;
  uint64_t nonce = (static_cast<uint64_t>(random()) << 32) ^ random();
  char text[64];
  std::snprintf(text, sizeof(text), "/%d/%016llx/", static_cast<int>(getpid()),
                static_cast<unsigned long long>(nonce));
  std::string host = host_name();
  std::replace(host.begin(), host.end(), '|', '_');
  reserve_prefix_ = "pull/" + host + text;
  tick_.reset(event_new(base_, -1, EV_PERSIST, &PullQueue::on_tick, this));
}

PullQueue::~PullQueue() = default;

void PullQueue::start() {
  feed_.start();
  timeval every{0, static_cast<suseconds_t>(kTickMs * 1000)};
  event_add(tick_.get(), &every);
}

void PullQueue::stop() {
  stopped_ = true;
  std::vector<std::shared_ptr<Wait>> parked;
  for (const auto& wait : waits_) {
    if (!wait->asking) {
      parked.push_back(wait);  // those asking answer when their reserve does
    }
  }
  for (const auto& wait : parked) {
    answer_reserve(wait);
  }
}

std::string PullQueue::next_reserve_id() {
  return reserve_prefix_ + std::to_string(++reserve_seq_);
}

int64_t PullQueue::recheck_ms() const { return feed_.all_up() ? kRecheckMs : kRecheckDownMs; }

void PullQueue::reserve(const Exchange& request, const std::string& topic_name) {
  Status ok = check_topic(topic_name, topics_);
  if (!ok.is_ok()) {
    return answer_(request, "reserve", http_status_of(ok.code()), error_json(ok.message()));
  }
  const Topic* topic = topics_.find(topic_name);
  if (!topic->pull()) {
    return answer_(request, "reserve", 409, error_json(mode_push_error(topic_name)));
  }
  std::string query(request->query());
  std::string error;
  int64_t ttr = 0;
  int64_t wait_s = 0;
  int64_t count = 0;
  if (!query_number(query, "ttr", kDefaultTtrS, 1, kMaxTtrS, "seconds", &ttr, &error) ||
      !query_number(query, "wait", 0, 0, kMaxWaitS, "seconds", &wait_s, &error) ||
      !query_number(query, "count", 1, 1, kMaxCount, "jobs", &count, &error)) {
    return answer_(request, "reserve", 400, error_json(error));
  }
  auto wait = std::make_shared<Wait>();
  wait->request = request;
  wait->topic = topic_name;
  wait->ttr_s = static_cast<int>(ttr);
  wait->count = static_cast<int>(count);
  int64_t now = monotonic_ms();
  wait->deadline_ms = now + wait_s * 1000;
  ask(wait);
}

void PullQueue::ask(const std::shared_ptr<Wait>& wait) {
  wait->asking = true;
  wait->woken = false;
  wait->recheck_at_ms = monotonic_ms() + recheck_ms();
  const Topic* topic = topics_.find(wait->topic);
  // An offline topic (or one deleted meanwhile), or one whose delivery
  // window is closed, hands out nothing, as the consumers skip them; its
  // waiting reserves wait on.
  if (topic == nullptr || !topic->online || !topic->pull() || jobs_.shard_count() == 0 ||
      windows_.closed(*topic, now_ms())) {
    return asked(wait);
  }
  wait->reserve_id = next_reserve_id();
  wait->first = first_shard_++ % jobs_.shard_count();
  if (!has_caps(*topic)) {
    return ask_shard(wait, 0);
  }
  // A capped topic: room first (pull_caps.h), held while the shards are asked.
  int64_t hold_ms =
      int64_t{config_.redis_command_timeout_ms} * static_cast<int64_t>(jobs_.shard_count() + 1) +
      1000;
  caps_.take(
      *topic, wait->reserve_id, wait->count, hold_ms, [this, wait](Result<PullCaps::Room> room) {
        if (!room.is_ok()) {
          err_log().warn("pull: caps of topic {} cannot be read: {}; nothing handed out",
                         wait->topic, room.status().message());
          wait->recheck_at_ms = monotonic_ms() + kRecheckDownMs;
          return asked(wait);
        }
        wait->allowed = room->allowed;
        if (room->allowed == 0) {
          // At a cap: asked again when a lease ends or a share comes (or an ack
          // or nack frees room: its publish wakes the topic's reserves).
          wait->allowed = -1;
          wait->recheck_at_ms =
              monotonic_ms() + std::min<int64_t>(std::max<int64_t>(1, room->wait_ms), recheck_ms());
          return asked(wait);
        }
        ask_shard(wait, 0);
      });
}

void PullQueue::ask_shard(const std::shared_ptr<Wait>& wait, size_t asked_count) {
  int most = wait->allowed >= 0 ? std::min(wait->count, wait->allowed) : wait->count;
  int left = most - static_cast<int>(wait->jobs.size());
  if (asked_count >= jobs_.shard_count() || left <= 0) {
    return asked(wait);
  }
  const Topic* topic = topics_.find(wait->topic);
  if (topic == nullptr) {
    return asked(wait);
  }
  size_t shard = (wait->first + asked_count) % jobs_.shard_count();
  ReserveSlot slot(wait->topic, int64_t{wait->ttr_s} * 1000, left, left,
                   max_attempts(*topic, config_.default_max_attempts));
  slot.end_memory = end_memory_of(*topic).arg();
  slot.late_policy = late_policy_arg(topic->late_policy);
  slot.dead_callback = !topic->dead_callback.empty();
  std::string forget = std::move(answered_[shard]);
  answered_[shard].clear();
  jobs_.reserve(shard, wait->reserve_id, {slot}, left, kMostBytes, forget,
                [this, wait, shard, asked_count](Result<ReserveBatch> batch) {
                  if (!batch.is_ok()) {
                    if (batch.status().code() != Code::kUnavailable) {
                      // Sent, no answer: it may have leased jobs nobody will get.
                      jobs_.release(shard, wait->reserve_id, [](Result<int>) {}, {wait->topic});
                    }
                    return ask_shard(wait, asked_count + 1);
                  }
                  if (!batch->jobs.empty()) {
                    wait->redis_now_ms = batch->redis_now_ms;
                  }
                  // Dead-lettered by the topic's late policy: their alert, as a
                  // consumer sends it.
                  if (const Topic* topic = topics_.find(wait->topic)) {
                    for (const auto& death : batch->late_deaths) {
                      alerts_.report(*topic, death.id, death.attempts, death.reason);
                    }
                  }
                  for (auto& job : batch->jobs) {
                    wait->jobs.push_back(std::move(job));
                  }
                  ask_shard(wait, asked_count + 1);
                });
}

std::vector<std::string> PullQueue::cap_leases(const Wait& wait) const {
  std::vector<std::string> leases;
  for (const auto& job : wait.jobs) {
    leases.push_back(PullCaps::lease(jobs_.addresses()[job.shard].name(), job.job.topic, job.job.id,
                                     wait.reserve_id));
  }
  return leases;
}

void PullQueue::asked(const std::shared_ptr<Wait>& wait) {
  wait->asking = false;
  if (wait->allowed >= 0) {
    // The caps' holds go, the leases this round got are counted.
    if (const Topic* topic = topics_.find(wait->topic)) {
      caps_.settle(*topic, wait->reserve_id, wait->allowed, int64_t{wait->ttr_s} * 1000,
                   cap_leases(*wait));
    }
    wait->allowed = -1;
  }
  bool gone = wait->request->peer_gone();
  if (!wait->jobs.empty() || gone || stopped_ || monotonic_ms() >= wait->deadline_ms) {
    return answer_reserve(wait);
  }
  if (wait->woken) {
    return ask(wait);  // made ready while it asked: look again
  }
  if (!wait->listed) {
    wait->listed = true;
    waits_.push_back(wait);
  }
}

void PullQueue::answer_reserve(const std::shared_ptr<Wait>& wait) {
  if (wait->listed) {
    wait->listed = false;
    waits_.remove(wait);
  }
  if (!wait->jobs.empty() && wait->request->peer_gone()) {
    // Nobody reads the answer: the jobs go back now (attempts uncounted)
    // rather than wait out their lease.
    std::vector<bool> released(jobs_.shard_count(), false);
    for (const auto& job : wait->jobs) {
      if (!released[job.shard]) {
        released[job.shard] = true;
        jobs_.release(job.shard, wait->reserve_id, [](Result<int>) {}, {wait->topic});
      }
    }
    if (const Topic* topic = topics_.find(wait->topic); topic && has_caps(*topic)) {
      caps_.drop(*topic, cap_leases(*wait));
    }
    request_log().info("reserve {} -> client gone, {} job(s) given back", wait->topic,
                       wait->jobs.size());
    count_pull(wait->topic, "released", wait->jobs.size());
    wait->jobs.clear();
  }
  int64_t lease_until = wait->redis_now_ms + int64_t{wait->ttr_s} * 1000;
  std::string text = "{\"jobs\":[";
  bool first = true;
  for (const auto& reserved : wait->jobs) {
    const Job& job = reserved.job;
    Json entry{
        {"topic", job.topic},
        {"id", job.id},
        {"attempt", job.attempts},
        {"due_ms", job.due_at_ms},
        {"created_ms", job.created_at_ms},
        {"token", make_token(reserved, wait->ttr_s, jobs_.addresses()[reserved.shard].name())},
        {"lease_until_ms", lease_until}};
    text += first ? "" : ",";
    first = false;
    text += with_raw_member(dump_json(entry), "body", embeddable_json(job.body));
    answered_[reserved.shard] = wait->reserve_id;
  }
  text += "]}";
  count_pull(wait->topic, "reserved", wait->jobs.size());
  request_log().info("reserve {} -> 200 {} job(s)", wait->topic, wait->jobs.size());
  answer_(wait->request, "reserve", 200, text);
}

void PullQueue::ready(const std::string& topic) {
  std::vector<std::shared_ptr<Wait>> woken;
  for (const auto& wait : waits_) {
    if (!topic.empty() && wait->topic != topic) {
      continue;
    }
    if (wait->asking) {
      wait->woken = true;  // its reserve may have run before the jobs came: see asked()
    } else {
      woken.push_back(wait);
    }
  }
  for (const auto& wait : woken) {
    ask(wait);
  }
}

void PullQueue::on_tick(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  static_cast<PullQueue*>(arg)->tick();
}

void PullQueue::tick() {
  int64_t now = monotonic_ms();
  std::vector<std::shared_ptr<Wait>> due;
  for (const auto& wait : waits_) {
    if (!wait->asking &&
        (now >= wait->deadline_ms || now >= wait->recheck_at_ms || wait->request->peer_gone())) {
      due.push_back(wait);
    }
  }
  for (const auto& wait : due) {
    if (now >= wait->deadline_ms || wait->request->peer_gone()) {
      answer_reserve(wait);
    } else {
      ask(wait);  // the backstop: a publish may have been lost
    }
  }
}

void PullQueue::drop_cap_lease(const std::string& topic_name, const std::string& id,
                               const PullToken& token) {
  const Topic* topic = topics_.find(topic_name);
  if (topic != nullptr && has_caps(*topic)) {
    caps_.drop(*topic, {PullCaps::lease(token.shard, topic_name, id, token.lease.reserve_id)});
  }
}

void PullQueue::settle(const Exchange& request, const std::string& topic_name,
                       const std::string& id, Verb verb) {
  const char* route = verb == Verb::kAck ? "ack" : verb == Verb::kNack ? "nack" : "touch";
  Status ok = check_topic_and_id(topic_name, id, topics_);
  if (!ok.is_ok()) {
    return answer_(request, route, http_status_of(ok.code()), error_json(ok.message()));
  }
  const Topic topic = *topics_.find(topic_name);
  if (!topic.pull()) {
    return answer_(request, route, 409, error_json(mode_push_error(topic_name)));
  }
  Json body = parse_json_any_number(request->body());
  if (!body.is_object() || !body.contains("token") || !body["token"].is_string()) {
    return answer_(request, route, 400,
                   error_json("token: expected a JSON body {\"token\": \"...\"} with the token "
                              "the reserve gave"));
  }
  PullToken token;
  if (!parse_token(body["token"].get<std::string>(), &token)) {
    return answer_(request, route, 400, error_json("token: not a token a reserve gave"));
  }
  std::optional<size_t> shard = jobs_.shard_named(token.shard);
  if (!shard) {
    return answer_(request, route, 409,
                   error_json(stale_error("the shard it was reserved from (" + token.shard +
                                          ") is no longer configured")));
  }
  const std::string stale = stale_error("the lease on " + topic_name + "/" + id +
                                        " is not this token's (it ran out, or the job was "
                                        "acked, nacked, deleted or replaced)");
  auto failed = [this, request, route](const Status& status) {
    answer_(request, route, http_status_of(status.code()), error_json(status.message()));
  };
  if (verb == Verb::kAck) {
    AckRequest ack(topic_name, id, token.lease, end_memory_of(topic).arg());
    ack.strict = true;
    return jobs_.ack_all(
        *shard, {ack},
        [this, request, topic_name, id, stale, failed,
         token](std::vector<Result<AckOutcome>> outcomes) {
          const Result<AckOutcome>& outcome = outcomes.front();
          if (!outcome.is_ok()) {
            return failed(outcome.status());
          }
          if (*outcome != AckOutcome::kAcked) {
            count_pull(topic_name, "stale");
            return answer_(request, "ack", 409, error_json(stale));
          }
          count_pull(topic_name, "acked");
          drop_cap_lease(topic_name, id, token);
          request_log().info("ack {} {} -> 200", topic_name, id);
          answer_(request, "ack", 200,
                  dump_json(Json{{"topic", topic_name}, {"id", id}, {"state", "done"}}));
        });
  }
  if (verb == Verb::kTouch) {
    int64_t ttr = token.ttr_s;
    if (body.contains("ttr")) {
      const Json& given = body["ttr"];
      if (!given.is_number_integer() || given.get<int64_t>() < 1 ||
          given.get<int64_t>() > kMaxTtrS) {
        return answer_(request, route, 400,
                       error_json("ttr: must be a whole number of seconds from 1 to " +
                                  std::to_string(kMaxTtrS)));
      }
      ttr = given.get<int64_t>();
    }
    return jobs_.touch(
        *shard, topic_name, id, token.lease, ttr * 1000,
        [this, request, topic_name, id, stale, failed, token,
         ttr](Result<std::optional<int64_t>> touched) {
          if (!touched.is_ok()) {
            return failed(touched.status());
          }
          if (!*touched) {
            count_pull(topic_name, "stale");
            return answer_(request, "touch", 409, error_json(stale));
          }
          count_pull(topic_name, "touched");
          const Topic* capped = topics_.find(topic_name);
          if (capped != nullptr && capped->max_in_flight > 0) {
            caps_.touch(*capped,
                        PullCaps::lease(token.shard, topic_name, id, token.lease.reserve_id),
                        ttr * 1000);
          }
          answer_(
              request, "touch", 200,
              dump_json(Json{{"topic", topic_name}, {"id", id}, {"lease_until_ms", **touched}}));
        });
  }
  // nack: a failed attempt, as a push delivery's failure.
  std::string query(request->query());
  std::string error;
  int64_t delay_s = -1;
  if (!query_number(query, "delay", -1, 0, kMaxNackDelayS, "seconds", &delay_s, &error)) {
    return answer_(request, route, 400, error_json(error));
  }
  int64_t delay_ms =
      delay_s >= 0 ? delay_s * 1000
                   : jittered_wait_ms(retry_delay_ms(topic, token.attempt, config_.backoff_unit_ms),
                                      topic.retry_jitter);
  std::string why = "nacked by a worker";
  if (body.contains("error") && body["error"].is_string()) {
    std::string text = body["error"].get<std::string>();
    if (text.size() > kMaxErrorBytes) {
      text = text.substr(0, kMaxErrorBytes) + "...";
    }
    if (!text.empty()) {
      why += ": " + text;
    }
  }
  int most = max_attempts(topic, config_.default_max_attempts);
  FailDeferral deferral;
  deferral.dead_callback = !topic.dead_callback.empty();
  deferral.end_memory = end_memory_of(topic);
  deferral.max_retry_ms = topic.max_retry_duration_s * 1000;
  int attempt = token.attempt;
  jobs_.fail(*shard, topic_name, id, token.lease, delay_ms, most, why, deferral,
             [this, request, topic, id, stale, failed, delay_ms, attempt, why,
              token](Result<FailOutcome> outcome) {
               if (!outcome.is_ok()) {
                 return failed(outcome.status());
               }
               Json answer{{"topic", topic.name}, {"id", id}};
               switch (*outcome) {
                 case FailOutcome::kStale:
                   count_pull(topic.name, "stale");
                   return answer_(request, "nack", 409, error_json(stale));
                 case FailOutcome::kDead:
                   answer["state"] = "dead";
                   alerts_.report(topic, id, attempt, why);
                   break;
                 case FailOutcome::kExpired:
                   answer["state"] = "expired";
                   break;
                 default:
                   answer["state"] = "retrying";
                   answer["due_ms"] = now_ms() + delay_ms;
                   break;
               }
               count_pull(topic.name, "nacked");
               drop_cap_lease(topic.name, id, token);
               request_log().info("nack {} {} -> 200 {}", topic.name, id,
                                  answer["state"].get<std::string>());
               answer_(request, "nack", 200, dump_json(answer));
             });
}

void PullQueue::ack_batch(const Exchange& request, const std::string& topic_name) {
  Status ok = check_topic(topic_name, topics_);
  if (!ok.is_ok()) {
    return answer_(request, "ack_batch", http_status_of(ok.code()), error_json(ok.message()));
  }
  const Topic topic = *topics_.find(topic_name);
  if (!topic.pull()) {
    return answer_(request, "ack_batch", 409, error_json(mode_push_error(topic_name)));
  }
  Json body = parse_json_any_number(request->body());
  if (!body.is_object() || !body.contains("acks") || !body["acks"].is_array()) {
    return answer_(request, "ack_batch", 400,
                   error_json("acks: expected {\"acks\": [{\"id\": ..., \"token\": ...}, ...]}"));
  }
  const Json& acks = body["acks"];
  if (acks.size() > static_cast<size_t>(config_.max_batch_jobs)) {
    return answer_(
        request, "ack_batch", 413,
        error_json("acks: " + std::to_string(acks.size()) + " acks, over the limit of " +
                   std::to_string(config_.max_batch_jobs) + " ([server] max_batch_jobs)"));
  }
  // Every ack's result, and per shard the acks sent there in one script.
  struct Batch {
    Json results = Json::array();
    std::vector<std::string> ids;
    std::vector<PullToken> tokens;
    std::vector<std::vector<size_t>> by_shard;
    size_t left = 0;
  };
  auto batch = std::make_shared<Batch>();
  batch->ids.resize(acks.size());
  batch->tokens.resize(acks.size());
  batch->by_shard.resize(jobs_.shard_count());
  const std::string stale = stale_error(
      "the lease is not this token's (it ran out, or the job "
      "was acked, nacked, deleted or replaced)");
  for (size_t n = 0; n < acks.size(); ++n) {
    const Json& ack = acks[n];
    Json& result = batch->results.emplace_back(Json::object());
    if (!ack.is_object() || !ack.contains("id") || !ack["id"].is_string() ||
        !ack.contains("token") || !ack["token"].is_string()) {
      result = Json{{"id", ack.is_object() && ack.contains("id") ? ack["id"] : Json()},
                    {"status", 400},
                    {"error", "each ack is {\"id\": ..., \"token\": ...}"}};
      continue;
    }
    std::string id = ack["id"].get<std::string>();
    result["id"] = id;
    Status id_ok = check_id(id);
    if (!id_ok.is_ok() || !parse_token(ack["token"].get<std::string>(), &batch->tokens[n])) {
      result["status"] = 400;
      result["error"] = id_ok.is_ok() ? "token: not a token a reserve gave" : id_ok.message();
      continue;
    }
    std::optional<size_t> shard = jobs_.shard_named(batch->tokens[n].shard);
    if (!shard) {
      result["status"] = 409;
      result["error"] = stale;
      continue;
    }
    batch->ids[n] = std::move(id);
    batch->by_shard[*shard].push_back(n);
  }
  auto finish = [this, request, batch, topic] {
    int acked = 0;
    std::vector<std::string> leases;
    for (size_t n = 0; n < batch->results.size(); ++n) {
      if (batch->results[n].value("state", "") == "done") {
        ++acked;
        leases.push_back(PullCaps::lease(batch->tokens[n].shard, topic.name, batch->ids[n],
                                         batch->tokens[n].lease.reserve_id));
      }
    }
    count_pull(topic.name, "acked", static_cast<uint64_t>(acked));
    count_pull(topic.name, "stale", batch->results.size() - static_cast<size_t>(acked));
    if (has_caps(topic) && !leases.empty()) {
      caps_.drop(topic, leases);
    }
    request_log().info("ack batch {} -> 200 {} of {} acked", topic.name, acked,
                       batch->results.size());
    answer_(request, "ack_batch", 200, dump_json(Json{{"results", batch->results}}));
  };
  for (const auto& members : batch->by_shard) {
    batch->left += members.empty() ? 0 : 1;
  }
  if (batch->left == 0) {
    return finish();
  }
  std::string memory = end_memory_of(topic).arg();
  for (size_t shard = 0; shard < batch->by_shard.size(); ++shard) {
    const std::vector<size_t>& members = batch->by_shard[shard];
    if (members.empty()) {
      continue;
    }
    std::vector<AckRequest> requests;
    for (size_t n : members) {
      AckRequest ack(topic.name, batch->ids[n], batch->tokens[n].lease, memory);
      ack.strict = true;
      requests.push_back(std::move(ack));
    }
    jobs_.ack_all(shard, requests,
                  [batch, shard, stale, finish](std::vector<Result<AckOutcome>> outcomes) {
                    const std::vector<size_t>& members = batch->by_shard[shard];
                    for (size_t k = 0; k < members.size() && k < outcomes.size(); ++k) {
                      Json& result = batch->results[members[k]];
                      if (!outcomes[k].is_ok()) {
                        result["status"] = http_status_of(outcomes[k].status().code());
                        result["error"] = outcomes[k].status().message();
                      } else if (*outcomes[k] == AckOutcome::kAcked) {
                        result["state"] = "done";
                      } else {
                        result["status"] = 409;
                        result["error"] = stale;
                      }
                    }
                    if (--batch->left == 0) {
                      finish();
                    }
                  });
  }
}

}  // namespace dq
