// libdqclient: a C++ client for the dq delay queue's HTTP API.
//
//   dq::client::Client client({.servers = {"10.0.0.1:6780", "10.0.0.2:6780"}, .timeout_ms = 2000});
//   auto added = client.add("orders", "order-42", R"({"n":42})", dq::client::When::delay(30));
//   if (!added) std::cerr << added.error().message << "\n";
//
// Every call returns a Result<T>: the value, or an Error with a typed code,
// the HTTP status and the server's message. A Client keeps one keep-alive
// connection per server and fails over along its server list: a server that
// cannot be reached or times out is skipped for a back-off period (1 s
// doubling to 30 s by default) and then tried again, never dropped for good.
//
// A Client is not thread-safe: use one per thread. This header is installed
// and depends on the standard library only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "dq/counts.h"

#if defined(DQCLIENT_BUILDING)
#define DQCLIENT_API __attribute__((visibility("default")))
#else
#define DQCLIENT_API
#endif

namespace dq::client {

enum class ErrorCode {
  InvalidArgument,  // 400, or refused before sending (e.g. body is not JSON)
  NotFound,         // 404: unknown topic, or no such job
  Conflict,         // 409: the id is still pending
  TooLarge,         // 413: body or batch over the server's limit
  Unavailable,      // 503 from every server, or no server could be reached
  Timeout,          // the last server tried did not answer within timeout_ms
  OutcomeUnknown,   // 504: the server could not tell whether the write happened
  Protocol,         // an answer that is not what the API promises
  Server,           // any other HTTP status (5xx, 405, ...)
  Unauthorized,     // 401: the server requires an API token and got none or an unknown one
  Forbidden,        // 403: the token's scope does not include the topic
  // 409 to a pull worker's ack, nack or touch: its lease is not the job's
  // current one (it ran out and the job went back or to another worker,
  // or the job was acked, deleted or replaced); nothing changed.
  StaleToken,
};

DQCLIENT_API const char* error_code_name(ErrorCode code);  // "NotFound", ...

struct Error {
  ErrorCode code = ErrorCode::Server;
  int http_status = 0;  // 0 when no server answered
  std::string message;  // the server's {"error": ...}, or what went wrong on the way
  std::string server;   // "host:port" of the last server tried ("" when none was)
};

// Either a T or an Error. Test it with ok() or `if (result)`.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : value_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.index() == 0; }
  explicit operator bool() const { return ok(); }
  // Precondition: ok() (value) / !ok() (error); std::bad_variant_access otherwise.
  T& value() { return std::get<0>(value_); }
  const T& value() const { return std::get<0>(value_); }
  const Error& error() const { return std::get<1>(value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::variant<T, Error> value_;
};

// A job an add waits for (When::with_after): its topic and id.
struct After {
  std::string topic;
  std::string id;
};

// When a job is due: the topic's default delay, a delay in seconds, or a
// fixed time (unix seconds, or "YYYY-MM-DD HH:MM:SS" in the server's time zone).
class When {
 public:
  When() = default;  // the topic's default delay
  static When default_delay() { return When(); }
  static When delay(double seconds) { return When(Kind::kDelay, seconds, {}); }
  static When at(int64_t unix_seconds) {
    return When(Kind::kAtSeconds, static_cast<double>(unix_seconds), {});
  }
  static When at(std::string datetime) { return When(Kind::kAtText, 0, std::move(datetime)); }
  // The IANA zone a text `at` (and expire_at) without an offset is read in,
  // e.g. When::at("2026-03-29 09:00").in_zone("Europe/Paris").
  When in_zone(std::string tz) const {
    When copy = *this;
    copy.tz_ = std::move(tz);
    return copy;
  }
  // The job is never delivered later than `seconds` after it is due (ttl),
  // or after a fixed time (expire_at: unix seconds or a datetime text).
  When with_ttl(double seconds) const {
    When copy = *this;
    copy.ttl_ = seconds;
    return copy;
  }
  When with_expire_at(std::string datetime) const {
    When copy = *this;
    copy.expire_at_ = std::move(datetime);
    return copy;
  }
  // The job waits (state Waiting) until each of these jobs was delivered,
  // then is due at its own time or at once if that passed (the add's
  // "after": at most 20, docs/delivery.md "Dependencies between jobs").
  When with_after(std::vector<After> jobs) const {
    When copy = *this;
    copy.after_ = std::move(jobs);
    return copy;
  }

  enum class Kind { kDefault, kDelay, kAtSeconds, kAtText };
  Kind kind() const { return kind_; }
  double number() const { return number_; }
  const std::string& text() const { return text_; }
  const std::string& tz() const { return tz_; }                // "": the topic's or server's zone
  double ttl() const { return ttl_; }                          // 0: none given
  const std::string& expire_at() const { return expire_at_; }  // "": none given
  const std::vector<After>& after() const { return after_; }   // empty: none

 private:
  When(Kind kind, double number, std::string text)
      : kind_(kind), number_(number), text_(std::move(text)) {}
  Kind kind_ = Kind::kDefault;
  double number_ = 0;
  std::string text_;
  std::string tz_;
  double ttl_ = 0;
  std::string expire_at_;
  std::vector<After> after_;
};

struct Added {
  std::string topic;
  std::string id;
  int64_t due_at_ms = 0;
  std::string raw_json;   // the server's answer
  bool existing = false;  // 200: the same job (same body) was pending already, e.g. a retry
  // With existing: the job already ended within its topic's dedup_window_s
  // ("delivered" or "dead"), and when; "" and 0 while pending.
  std::string ended;
  int64_t ended_at_ms = 0;
};

// Done, Expired and Deleted: a gone job's final state, answered while its
// topic's history (keep_done_days) keeps it. Listed after Unknown, so the
// values the library had keep their numbers.
enum class JobState {
  Delayed,
  Ready,
  Working,
  Retrying,
  Dead,
  Held,
  Unknown,
  Done,
  Expired,
  Deleted,
  Waiting  // for the jobs its add named in "after"
};
DQCLIENT_API const char* job_state_name(JobState state);  // "delayed", ...

struct JobInfo {
  std::string topic;
  std::string id;
  std::string body_json;  // the job's body as compact JSON text
  JobState state = JobState::Unknown;
  int attempts = 0;
  int64_t due_at_ms = 0;
  int64_t created_at_ms = 0;
  std::optional<std::string> last_error;
  std::string raw_json;  // the server's answer
};

// The answer to run(): the job's state and due time after it.
struct RunResult {
  JobState state = JobState::Unknown;
  int64_t due_at_ms = 0;
  bool moved = false;  // it was delayed or retrying and is due now; false: due already
};

// The answer to update(): the job's new version, or the job added.
struct UpdateResult {
  bool created = false;  // 201: there was no such job; it was added
  JobState state = JobState::Unknown;
  JobState previous_state = JobState::Unknown;  // when updated (not created)
  int64_t due_at_ms = 0;
  std::string raw_json;  // the server's answer
};

struct Deleted {
  // 202: deleted, but a delivery was already under way; its callback still runs.
  bool delivery_in_flight = false;
};

struct BatchJob {
  std::string id;
  std::string body_json;  // any JSON text
  When when;
};

struct BatchItemResult {
  std::string id;
  int status = 0;                    // HTTP-like: 201 added, 409, 400, 503, ...
  std::optional<int64_t> due_at_ms;  // when added
  std::optional<Error> error;        // when not added
  bool ok() const { return !error.has_value(); }
};

using StateCounts = dq::StateCounts;  // dq/counts.h
using EventCounts = dq::EventCounts;

struct TopicSummary {
  std::string name;
  bool online = false;
  std::optional<StateCounts> now;  // absent when no Redis shard could be reached
};

struct TopicList {
  std::vector<TopicSummary> topics;  // this page
  int64_t total = 0;                 // registered topics matching the search
  std::vector<std::string> unreachable_shards;
  std::string raw_json;
};

struct TopicStats {
  std::string topic;
  StateCounts now;
  EventCounts total;                                         // since the shards began
  std::vector<std::pair<int64_t, EventCounts>> per_minute;   // unix minute, last 60, oldest first
  std::vector<std::pair<std::string, EventCounts>> per_day;  // "YYYYMMDD", last 30, oldest first
  std::vector<std::string> unreachable_shards;               // left out of the numbers
  std::string raw_json;
};

struct ListedJob {
  std::string id;
  JobState state = JobState::Unknown;
  int attempts = 0;
  int64_t due_at_ms = 0;
  int64_t created_at_ms = 0;
  std::optional<std::string> last_error;
  int64_t last_error_at_ms = 0;
  std::string shard;              // "host:port" of the Redis shard holding it
  int64_t lease_deadline_ms = 0;  // Working only
};

struct JobList {
  std::vector<ListedJob> jobs;  // this page, next due first
  int64_t total = 0;            // jobs in the state (shards that answered)
  bool truncated = false;       // the server stopped looking before the page was full
  std::vector<std::string> unreachable_shards;
  std::string raw_json;
};

// A topic's settings as the server shows them (GET /v1/topics/{topic}):
// every field of docs/registry.md, signing secrets masked, except in the
// answer of the write that made a new one (shown that once, in full).
struct TopicSettings {
  std::string name;
  int64_t version = 0;   // what an edit names to be refused if changed meanwhile
  bool created = false;  // put_topic: it did not exist (201)
  std::string json;      // the server's topic object
};

struct TopicDeletion {
  std::string name;
  int64_t purged_jobs = 0;     // deleted with it (purge)
  int64_t in_flight_jobs = 0;  // of those, being delivered: their callbacks still complete
};

// One of a topic's schedules as the server shows it (docs/schedules.md):
// spec, id, tz, zone, body, catch_up, paused, created_at_ms and its next
// five run times (none while paused).
struct Schedule {
  std::string spec;
  std::string id;
  bool paused = false;
  std::string json;  // the server's schedule object
};

// Pull topics (mode "pull"): a worker reserves jobs, then acks, nacks or
// touches each with its token (docs/delivery.md, "Pull workers").
struct ReserveOptions {
  int ttr_s = 30;  // the lease, seconds (1..86400): not acked by then, the job goes back
  int wait_s = 0;  // long poll: wait up to this long (0..60) for a job to become ready
  int count = 1;   // at most this many jobs (1..100)
};

struct ReservedJob {
  std::string topic;
  std::string id;
  std::string body_json;  // the job's body as JSON text
  int attempt = 0;        // 1 for the first
  int64_t due_ms = 0;
  int64_t created_ms = 0;
  std::string token;  // names this lease: ack, nack and touch carry it
  int64_t lease_until_ms = 0;
};

// The answer to nack(): "retrying" (due again at due_ms), "dead" (its
// attempts are used up: a dead letter) or "expired" (its ttl ends first).
struct NackResult {
  std::string state;
  int64_t due_ms = 0;  // retrying only
};

struct Options {
  std::vector<std::string> servers;  // "host:port" or "http://host:port"; tried in this order
  int timeout_ms = 2000;             // each attempt on one server, connect included
  int connect_timeout_ms = 1000;     // connecting to one server
  int down_backoff_ms = 1000;        // first back-off of a failed server; doubles per failure
  int max_down_backoff_ms = 30000;   // back-off cap
  // Rounds over the server list when every server answered 503 or 504 or
  // timed out; each round waits retry_backoff_ms, doubled per round. Safe for
  // every call: a retried add of the same body answers 200 (existing).
  int retries = 3;
  int retry_backoff_ms = 100;
  // An API token (`dqctl token add`), sent as "Authorization: Bearer <token>";
  // needed when the server has [server] require_token = yes. Empty: none sent.
  std::string token = "";  // (an initializer: designated initializers may leave it out)
};

class DQCLIENT_API Client {
 public:
  explicit Client(Options options);
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // POST /v1/topics/{topic}/jobs. body_json must be JSON text ('"text"', '{"a":1}').
  Result<Added> add(const std::string& topic, const std::string& id, const std::string& body_json,
                    const When& when = When());
  // GET /v1/topics/{topic}/jobs/{id}.
  Result<JobInfo> get(const std::string& topic, const std::string& id);
  // DELETE /v1/topics/{topic}/jobs/{id}.
  Result<Deleted> del(const std::string& topic, const std::string& id);
  // POST /v1/topics/{topic}/jobs/{id}/run: a delayed or retrying job is due
  // at once, its attempts kept. A dead letter is a Conflict (requeue it).
  Result<RunResult> run(const std::string& topic, const std::string& id);
  // PUT /v1/topics/{topic}/jobs/{id}: a pending job gets a new body and/or
  // due time in place, as one step (body_json nullopt keeps the body; a
  // default When keeps the due time). Its delivery under way, if any, still
  // runs with the old body; the new version is delivered after it at its
  // own time. No such job: it is added (created, a body is needed then). A
  // dead letter is a Conflict.
  Result<UpdateResult> update(const std::string& topic, const std::string& id,
                              const std::optional<std::string>& body_json,
                              const When& when = When());
  // POST /v1/topics/{topic}/jobs/batch: one result per job, in the same order.
  // The call itself fails only when the batch as a whole was refused.
  Result<std::vector<BatchItemResult>> add_batch(const std::string& topic,
                                                 const std::vector<BatchJob>& jobs);

  // GET /v1/topics: registered topics whose name contains `search` (any
  // case), with their counts. limit 1..500.
  Result<TopicList> list_topics(const std::string& search = "", int64_t offset = 0,
                                int64_t limit = 100);
  // GET /v1/topics/{topic}/stats.
  Result<TopicStats> topic_stats(const std::string& topic);
  // GET /v1/topics/{topic}/jobs?state=: state Delayed, Ready, Working or
  // Retrying (others are refused before sending). limit 1..500.
  Result<JobList> list_jobs(const std::string& topic, JobState state, int64_t offset = 0,
                            int64_t limit = 50);

  // Topics (GET/PUT/PATCH/DELETE /v1/topics/{topic}); the writes need a
  // token with the admin scope when the server requires tokens.
  // fields_json: a JSON object of topic fields (docs/registry.md), e.g.
  // R"({"callback_url":"http://10.0.0.5/cb","max_attempts":5})".
  // if_version: refused (Conflict) when the topic's version is not that one.
  Result<TopicSettings> get_topic(const std::string& topic);
  // Creates the topic, or sets every field (absent ones to their defaults;
  // signing keys stay unless named).
  Result<TopicSettings> put_topic(const std::string& topic, const std::string& fields_json,
                                  std::optional<int64_t> if_version = std::nullopt);
  // Creates the topic; Conflict when it exists (PUT with If-None-Match: *).
  Result<TopicSettings> create_topic(const std::string& topic, const std::string& fields_json);
  // Changes the fields given; NotFound when the topic does not exist.
  Result<TopicSettings> patch_topic(const std::string& topic, const std::string& fields_json,
                                    std::optional<int64_t> if_version = std::nullopt);
  // Refused (Conflict) while it holds jobs, unless purge deletes them with it.
  Result<TopicDeletion> delete_topic(const std::string& topic, bool purge = false);

  // A topic's schedules (/v1/topics/{topic}/schedules); the writes need a
  // token with the admin scope when the server requires tokens.
  Result<std::vector<Schedule>> list_schedules(const std::string& topic);
  // fields_json: {"spec", "tz"?, "body"?, "catch_up"?, "paused"?}. Conflict
  // when the topic has that spec already, unless an earlier attempt of this
  // call (a timeout, a 504) may have added it: then the schedule found.
  Result<Schedule> add_schedule(const std::string& topic, const std::string& fields_json);
  // Pauses (no tick is added) or resumes the schedule with that spec.
  Result<Schedule> pause_schedule(const std::string& topic, const std::string& spec, bool paused);
  // Deletes the schedule with that spec; answers its id ("" when an attempt
  // of this call that timed out or got a 504 deleted it: NotFound after it).
  Result<std::string> delete_schedule(const std::string& topic, const std::string& spec);

  // GET /v1/topics/{topic}/reserve: leases up to options.count ready jobs
  // of a pull topic, waiting up to options.wait_s for one (an empty vector:
  // none became ready). A push topic is a Conflict.
  Result<std::vector<ReservedJob>> reserve(const std::string& topic,
                                           const ReserveOptions& options = {});
  // POST .../jobs/{id}/ack: the job is done. StaleToken: the lease is not
  // the job's current one; nothing changed.
  Result<bool> ack(const ReservedJob& job);
  // POST /v1/topics/{topic}/ack: many jobs of one topic acked in one call
  // (one script per shard on the server). One result per job, in order:
  // status 200 done, 409 (error code StaleToken) stale, 400 a bad id or token.
  Result<std::vector<BatchItemResult>> ack_batch(const std::string& topic,
                                                 const std::vector<ReservedJob>& jobs);
  // POST .../jobs/{id}/nack: a failed attempt, tried again after delay_s
  // (nullopt: the topic's retry backoff) or dead-lettered when its
  // attempts are used up; error is kept as its last error.
  Result<NackResult> nack(const ReservedJob& job, std::optional<int> delay_s = std::nullopt,
                          const std::string& error = "");
  // POST .../jobs/{id}/touch: the lease ends ttr_s from now (nullopt: the
  // reserve's ttr); job.lease_until_ms is updated.
  Result<int64_t> touch(ReservedJob& job, std::optional<int> ttr_s = std::nullopt);

  // Per server: whether it is currently skipped after a failure.
  struct ServerState {
    std::string server;
    bool down = false;
    int64_t retry_in_ms = 0;  // when down: time left before it is tried again
  };
  std::vector<ServerState> servers() const;
  // "host:port" of the server that answered the last call ("" when none did).
  const std::string& last_server() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dq::client
