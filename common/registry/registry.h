// Registry: topics, extra Redis shards and alert settings, kept in SQLite.
// The schema lives in sql/NNN_*.sql and is applied (in order, once each) when
// the registry is opened. Children re-read topics every few seconds, so an
// edit is picked up without a restart.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/signing_keys.h"
#include "common/registry/sqlite_db.h"
#include "common/registry/topic_schedules.h"

struct sqlite3;

namespace dq {

struct Topic {
  bool pull() const { return mode == "pull"; }
  std::string name;
  // "push": dq calls callback_url with each job (the consumer); "pull": no
  // callback, workers reserve the jobs over the API and ack, nack or touch
  // them (server/pull_queue.h; docs/delivery.md, "Pull workers").
  std::string mode = "push";
  std::string callback_url;     // "" only for a pull topic
  std::string method = "POST";  // POST (JSON body) or GET (query parameters)
  // "json": dq's JSON document; "form": the body's keys as form fields or
  // query parameters, as the PHP delay queue sent them (consumer/callback_request.h).
  std::string callback_format = "json";
  // "" (any 2xx succeeds) or "PATH=VALUE" (common/registry/success_rule.h): a 2xx
  // whose JSON body does not hold VALUE at PATH is a failed attempt.
  std::string success_json;
  int timeout_ms = 5000;
  int64_t default_delay_s = 0;
  // The IANA zone (e.g. "Europe/Paris") an add's `at` without an offset is
  // read in when the add names no `tz`, and the legacy fix_time; "": the
  // server's local zone.
  std::string tz;
  // "" or the days and hours its jobs may be delivered in, e.g. "Mon-Fri
  // 09:00-18:00 Asia/Shanghai" (common/core/delivery_window.h): a job due
  // outside it waits for the opening without using an attempt. A window
  // that names no zone is read in tz, else in UTC.
  std::string delivery_window;
  // What its jobs that wait for others ("after") do when one of those dies,
  // expires or is deleted: "dead" (dead-lettered, the reason naming it) or
  // "release" (as if it was delivered). docs/delivery.md, "Dependencies".
  std::string on_dependency_dead = "dead";
  int max_attempts = 0;      // 0: [delivery] default_max_attempts
  int priority = 2;          // 1 highest, 3 lowest
  std::string retry_ms;      // optional schedule "1000,3000,5000" (ms); empty: 2n+1 units
  std::string alert_emails;  // comma-separated
  std::string creator;
  bool online = true;
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  // Answers that protect the receiver (common/registry/delivery_rules.h).
  int max_deferrals = 10;  // 429/503 + Retry-After answers a job may honour
  std::string dead_on;     // "" or statuses that dead-letter at once: "400,410,422"
  int retry_jitter = 0;    // percent each retry wait is lengthened by at random
  // Circuit breaking per receiver (docs/delivery.md): stop calling the
  // callback's host:port after circuit_failures receiver failures in a row,
  // probe it after circuit_open_ms (doubling while probes fail).
  bool circuit_breaker = true;
  int circuit_failures = 5;
  int circuit_open_ms = 10000;
  // Caps on calls to the callback, shared by every consumer on every host
  // (docs/delivery.md, "Caps per topic"); 0 is no cap.
  int max_in_flight = 0;  // calls open at once
  int max_rate = 0;       // calls per second
  int max_burst = 0;      // calls at once above max_rate; 0: max_rate / 10, at least 1
  // Standard Webhooks signing keys (common/registry/signing_keys.h): the
  // current one of each kind and those a rotation keeps for its overlap. Kept
  // in their own table; read and written with the topic.
  std::vector<SigningKey> signing_keys;
  // "" or the URL dq-redis-checker POSTs a signed JSON document to when one of
  // the topic's jobs dies (docs/callbacks.md, "Dead-letter callback").
  std::string dead_callback;
  // How long a job that ran (delivered, or dead) is remembered: an
  // add of the same id and body within it is a producer's retry, answered
  // 200 "existing" with how the job ended, never run again. 0: not remembered.
  int64_t dedup_window_s = kDefaultDedupWindowS;
  // How long a job may go on from its first attempt (or, never attempted,
  // from when it was first due) before it is dead-lettered, whatever held it
  // back: retries, Retry-After pauses, an open circuit. 0: no limit.
  int64_t max_retry_duration_s = kDefaultMaxRetryDurationS;
  // Seconds a job may still be delivered after it is due; after that it is
  // never delivered (state "expired"). A job's own ttl or expire_at
  // overrides it. 0: no limit.
  int64_t ttl = 0;
  // Days a delivered, deleted or expired job is kept in compact form (when,
  // attempts, last status, the answer's first bytes, the host that
  // delivered it), so GET answers its final state. 0: none kept.
  int keep_done_days = 0;
  // "deliver", "dead_after:S" or "drop_after:S" (common/core/late_policy.h).
  std::string late_policy = "deliver";
  // Schedules that add a job per tick (common/registry/topic_schedules.h).
  // Kept in their own table; read and written with the topic.
  std::vector<TopicSchedule> schedules;
  // The version an edit names (registry_versions; 0: never written since
  // versions exist). Not a column: read beside the row.
  int64_t version = 0;
};

// Checks a topic's fields (name syntax, URL scheme, method, ranges); the
// Status names the first bad field.
Status validate_topic(const Topic& topic);

// A refusal of a URL checked by the callback URL rules ("callback_url: ...")
// as the refusal of the topic's dead_callback ("dead_callback: ..."); any
// other Status as it is.
Status dead_callback_status(const Status& callback_url_status);

// Checks a comma-separated list of email addresses (empty is fine); the
// Status names `field` and the first bad address.
Status validate_email_list(const std::string& field, const std::string& emails);

class Registry {
 public:
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Opens (creating if needed) and migrates the database.
  static Result<std::unique_ptr<Registry>> open(const std::string& path);

  Result<std::vector<Topic>> list_topics();
  Result<Topic> get_topic(const std::string& name);  // kNotFound when absent
  Status add_topic(const Topic& topic);              // kConflict when it exists
  Status update_topic(const Topic& topic);           // kNotFound when absent
  Status delete_topic(const std::string& name);      // kNotFound when absent

  // Shards added beyond [redis] shards (kept for the admin page).
  Result<std::vector<std::string>> list_extra_shards();
  // address is host:port (kInvalid otherwise); kConflict when listed already.
  // state: "moving" (a shard added: common/registry/shard_list.h) or
  // "draining" (a config-file shard drained).
  Status add_extra_shard(const std::string& address, const std::string& password,
                         const std::string& state = "moving");
  Status remove_extra_shard(const std::string& address);  // kNotFound when absent

  // Alert settings: key/value (smtp_host, smtp_port, mail_from, ...).
  Result<std::map<std::string, std::string>> alert_settings();
  Status set_alert_setting(const std::string& key, const std::string& value);

  // The connection, for versioned writes (common/registry/registry_write.h).
  sqlite3* db() { return db_; }

 private:
  explicit Registry(sqlite3* db) : db_(db) {}
  Status migrate();
  sqlite3* db_;
};

// A connection of its own to the registry database, migrated first as
// Registry::open does: for the stores of its other tables (API tokens, admin
// users, alerts).
Result<SqliteHandle> open_registry_sqlite(const std::string& path);

}  // namespace dq
