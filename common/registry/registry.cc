// Implements common/registry/registry.h: schema migrations kept in PRAGMA
// user_version, and the topic / shard / alert-setting tables (the topic checks
// are in topic_validation.cc).
#include "common/registry/registry.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/core/clock.h"
#include "common/core/config.h"
#include "common/registry/callback_url.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/registry_copy.h"
#include "common/registry/schedule_store.h"
#include "common/registry/signing_key_store.h"
#include "common/registry/sql_migrations.h"
#include "common/registry/sqlite_db.h"
#include "common/registry/success_rule.h"
#include "common/registry/topic_caps.h"
#include "common/store/job.h"

namespace dq {
namespace {

Status bad_field(const std::string& field, const std::string& why) {
  return Status(Code::kInvalid, field + ": " + why);
}

// Columns in the order read_topic() expects.
constexpr const char* kTopicColumns =
    "name, callback_url, method, timeout_ms, default_delay_s, max_attempts, priority, retry_ms, "
    "alert_emails, creator, status, created_at_ms, updated_at_ms, callback_format, success_json"
    ", max_deferrals, dead_on, retry_jitter"
    ", circuit_breaker, circuit_failures, circuit_open_ms"
    ", max_in_flight, max_rate, max_burst"
    ", dead_callback, dedup_window_s, max_retry_duration_s"
    ", tz, ttl, keep_done_days, late_policy, delivery_window, mode, on_dependency_dead";

Topic read_topic(const Statement& row) {
  Topic topic;
  std::string status;
  row.read(&topic.name, &topic.callback_url, &topic.method, &topic.timeout_ms,
           &topic.default_delay_s, &topic.max_attempts, &topic.priority, &topic.retry_ms,
           &topic.alert_emails, &topic.creator, &status, &topic.created_at_ms, &topic.updated_at_ms,
           &topic.callback_format, &topic.success_json, &topic.max_deferrals, &topic.dead_on,
           &topic.retry_jitter, &topic.circuit_breaker, &topic.circuit_failures,
           &topic.circuit_open_ms, &topic.max_in_flight, &topic.max_rate, &topic.max_burst,
           &topic.dead_callback, &topic.dedup_window_s, &topic.max_retry_duration_s, &topic.tz,
           &topic.ttl, &topic.keep_done_days, &topic.late_policy, &topic.delivery_window,
           &topic.mode, &topic.on_dependency_dead);
  topic.online = status == "online";
  return topic;
}

// Binds ?1..?11 and ?14..?18 of the INSERT and UPDATE statements, which
// number the topic's own fields alike; the timestamps are ?12 and ?13.
Statement& bind_topic_fields(Statement& stmt, const Topic& topic) {
  return stmt.bind(1, topic.name)
      .bind(2, topic.callback_url)
      .bind(3, topic.method)
      .bind(4, int64_t{topic.timeout_ms})
      .bind(5, topic.default_delay_s)
      .bind(6, int64_t{topic.max_attempts})
      .bind(7, int64_t{topic.priority})
      .bind(8, topic.retry_ms)
      .bind(9, topic.alert_emails)
      .bind(10, topic.creator)
      .bind(11, std::string(topic.online ? "online" : "offline"))
      .bind(14, topic.callback_format)
      .bind(15, topic.success_json)
      .bind(16, int64_t{topic.max_deferrals})
      .bind(17, topic.dead_on)
      .bind(18, int64_t{topic.retry_jitter})
      .bind(19, int64_t{topic.circuit_breaker ? 1 : 0})
      .bind(20, int64_t{topic.circuit_failures})
      .bind(21, int64_t{topic.circuit_open_ms})
      .bind(22, int64_t{topic.max_in_flight})
      .bind(23, int64_t{topic.max_rate})
      .bind(24, int64_t{topic.max_burst})
      .bind(25, topic.dead_callback)
      .bind(26, topic.dedup_window_s)
      .bind(27, topic.max_retry_duration_s)
      .bind(28, topic.tz)
      .bind(29, topic.ttl)
      .bind(30, int64_t{topic.keep_done_days})
      .bind(31, topic.late_policy)
      .bind(32, topic.delivery_window)
      .bind(33, topic.mode)
      .bind(34, topic.on_dependency_dead);
}

Result<int> schema_version(sqlite3* db) {
  auto version = pragma_int(db, "PRAGMA user_version");
  if (!version.is_ok()) {
    return version.status();
  }
  return static_cast<int>(*version);
}

}  // namespace

Registry::~Registry() { SqliteHandle close(db_); }

Result<SqliteHandle> open_registry_sqlite(const std::string& path) {
  auto migrated = Registry::open(path);  // creates and migrates the schema
  if (!migrated.is_ok()) {
    return migrated.status();
  }
  return open_sqlite(path);
}

Result<std::unique_ptr<Registry>> Registry::open(const std::string& path) {
  // The default path (../var/dq.db) may not exist yet on a fresh checkout.
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, error);
  }
  if (error) {
    return Status(Code::kUnavailable, "cannot create " + parent.string() + ": " + error.message());
  }
  // Every child opens the registry at start, so on a fresh database several
  // processes race to switch it to WAL and migrate it. SQLite answers some of
  // these races with SQLITE_BUSY at once (without its busy handler, to avoid
  // a deadlock), so the whole open is retried for up to 5 s.
  std::unique_ptr<Registry> registry;
  for (int attempt = 1;; ++attempt) {
    Status status;
    auto db = open_sqlite(path);
    if (db.is_ok()) {
      registry.reset(new Registry(db->release()));
      status = registry->migrate();
      if (status.is_ok()) {
        break;
      }
    } else {
      status = db.status();
    }
    bool busy = status.message().find("locked") != std::string::npos ||
                status.message().find("busy") != std::string::npos;
    if (!busy || attempt >= 50) {
      return status;
    }
    registry.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + attempt * 2));
  }
  return registry;
}

// Applies each migration newer than PRAGMA user_version in its own
// transaction. Several processes may open a fresh database at once, so the
// version is read again under the write lock before applying.
Status Registry::migrate() {
  auto current = schema_version(db_);
  if (!current.is_ok()) {
    return current.status();
  }
  for (const SqlMigration& migration : kSqlMigrations) {
    if (migration.version <= *current) {
      continue;
    }
    auto transaction = Transaction::begin(db_);
    if (!transaction.is_ok()) {
      return transaction.status();
    }
    auto locked_version = schema_version(db_);
    if (!locked_version.is_ok()) {
      return locked_version.status();
    }
    if (migration.version <= *locked_version) {
      continue;  // another process applied it
    }
    Status status = exec_sql(db_, migration.sql);
    if (!status.is_ok()) {
      return Status(status.code(),
                    std::string("migration ") + migration.name + ": " + status.message());
    }
    // PRAGMA takes no bound parameters; the version is a number from the
    // embedded file name, never outside input.
    std::string set_version = "PRAGMA user_version = " + std::to_string(migration.version);
    status = exec_sql(db_, set_version.c_str());
    if (!status.is_ok()) {
      return status;
    }
    status = (*transaction)->commit();
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

Result<std::vector<Topic>> Registry::list_topics() {
  std::string sql = std::string("SELECT ") + kTopicColumns + " FROM topics ORDER BY name";
  auto stmt = Statement::prepare(db_, sql.c_str());
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  auto topics = stmt->rows(read_topic);
  auto versions = local_versions(db_, "topic");
  if (!topics.is_ok() || !versions.is_ok()) {
    return topics.is_ok() ? versions.status() : topics.status();
  }
  Status keys = attach_signing_keys(db_, &*topics, now_ms());
  if (keys.is_ok()) {
    keys = attach_schedules(db_, &*topics);
  }
  if (!keys.is_ok()) {
    return keys;
  }
  for (Topic& topic : *topics) {
    auto known = versions->find(topic.name);
    topic.version = known == versions->end() ? 0 : known->second.version;
  }
  return topics;
}

Result<Topic> Registry::get_topic(const std::string& name) {
  std::string sql = std::string("SELECT ") + kTopicColumns + " FROM topics WHERE name = ?1";
  auto found = Statement::first_row(db_, sql, name);
  if (!found.is_ok()) {
    return found.status();
  }
  if (!*found) {
    return Status(Code::kNotFound, "topic '" + name + "' does not exist");
  }
  std::vector<Topic> one{read_topic(**found)};
  Status keys = attach_signing_keys(db_, &one, now_ms());
  if (keys.is_ok()) {
    keys = attach_schedules(db_, &one);
  }
  if (!keys.is_ok()) {
    return keys;
  }
  auto version = local_version(db_, "topic", name);
  if (!version.is_ok()) {
    return version.status();
  }
  one[0].version = version->version;
  return std::move(one[0]);
}

Status Registry::add_topic(const Topic& topic) {
  Status status = validate_topic(topic);
  if (!status.is_ok()) {
    return status;
  }
  int64_t now = now_ms();
  // The topic and its signing keys are written together.
  auto transaction = Transaction::begin(db_);
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  auto stmt = Statement::prepare(
      db_,
      "INSERT INTO topics (name, callback_url, method, timeout_ms, default_delay_s, "
      "max_attempts, priority, retry_ms, alert_emails, creator, status, created_at_ms, "
      "updated_at_ms, callback_format, success_json"
      ", max_deferrals, dead_on, retry_jitter"
      ", circuit_breaker, circuit_failures, circuit_open_ms"
      ", max_in_flight, max_rate, max_burst"
      ", dead_callback, dedup_window_s, max_retry_duration_s"
      ", tz, ttl, keep_done_days, late_policy, delivery_window, mode, on_dependency_dead"
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15"
      ", ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24"
      ", ?25, ?26, ?27"
      ", ?28, ?29, ?30, ?31, ?32, ?33, ?34"
      ")");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  bind_topic_fields(*stmt, topic)
      .bind(12, topic.created_at_ms > 0 ? topic.created_at_ms : now)
      .bind(13, now);
  status = stmt->run();
  if (status.code() == Code::kConflict) {
    return Status(Code::kConflict, "topic '" + topic.name + "' already exists");
  }
  if (status.is_ok()) {
    status = store_signing_keys(db_, topic);
  }
  if (status.is_ok()) {
    status = store_schedules(db_, topic);
  }
  return status.is_ok() ? (*transaction)->commit() : status;
}

Status Registry::update_topic(const Topic& topic) {
  Status status = validate_topic(topic);
  if (!status.is_ok()) {
    return status;
  }
  auto transaction = Transaction::begin(db_);
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  auto stmt =
      Statement::prepare(db_,
                         "UPDATE topics SET callback_url = ?2, method = ?3, timeout_ms = ?4, "
                         "default_delay_s = ?5, max_attempts = ?6, priority = ?7, retry_ms = ?8, "
                         "alert_emails = ?9, creator = ?10, status = ?11, updated_at_ms = ?12, "
                         "callback_format = ?14, success_json = ?15"
                         ", max_deferrals = ?16, dead_on = ?17, retry_jitter = ?18"
                         ", circuit_breaker = ?19, circuit_failures = ?20, circuit_open_ms = ?21"
                         ", max_in_flight = ?22, max_rate = ?23, max_burst = ?24"
                         ", dead_callback = ?25, dedup_window_s = ?26"
                         ", max_retry_duration_s = ?27"
                         ", tz = ?28, ttl = ?29, keep_done_days = ?30, late_policy = ?31"
                         ", delivery_window = ?32, mode = ?33, on_dependency_dead = ?34"
                         " WHERE name = ?1");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  bind_topic_fields(*stmt, topic).bind(12, now_ms());
  status = stmt->run_changing("topic '" + topic.name + "' does not exist");
  if (status.is_ok()) {
    status = store_signing_keys(db_, topic);
  }
  if (status.is_ok()) {
    status = store_schedules(db_, topic);
  }
  return status.is_ok() ? (*transaction)->commit() : status;
}

Status Registry::delete_topic(const std::string& name) {
  auto transaction = Transaction::begin(db_);
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  auto stmt = Statement::prepare(db_, "DELETE FROM topics WHERE name = ?1", name);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  Status status = stmt->run_changing("topic '" + name + "' does not exist");
  if (status.is_ok()) {
    status = delete_signing_keys(db_, name);  // a topic re-added later starts unsigned
  }
  if (status.is_ok()) {
    status = delete_schedules(db_, name);
  }
  return status.is_ok() ? (*transaction)->commit() : status;
}

// "host:port" or "host:port:password", the same syntax as [redis] shards.
Result<std::vector<std::string>> Registry::list_extra_shards() {
  auto stmt = Statement::prepare(
      db_,
      "SELECT address, password FROM shards WHERE enabled = 1 ORDER BY created_at_ms, address");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->rows([](const Statement& row) {
    std::string password = row.column_text(1);
    return row.column_text(0) + (password.empty() ? "" : ":" + password);
  });
}

Status Registry::add_extra_shard(const std::string& address, const std::string& password,
                                 const std::string& state) {
  std::string host;
  int port = 0;
  if (!parse_host_port(address, &host, &port) || host.find_first_of(" \t/,") != std::string::npos) {
    return bad_field("address", "'" + address + "' is not host:port");
  }
  if (password.find_first_of(",\r\n") != std::string::npos) {
    return bad_field("password", "must not contain a comma or a line break");
  }
  int64_t now = now_ms();
  Status status = run_sql(db_,
                          "INSERT INTO shards (address, password, enabled, created_at_ms, state, "
                          "changed_at_ms) VALUES (?1, ?2, 1, ?3, ?4, ?3)",
                          address, password, now, state);
  if (status.code() == Code::kConflict) {
    return Status(Code::kConflict, "shard " + address + " is listed already");
  }
  return status;
}

Status Registry::remove_extra_shard(const std::string& address) {
  auto stmt = Statement::prepare(db_, "DELETE FROM shards WHERE address = ?1", address);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->run_changing("shard '" + address + "' is not in the registry");
}

Result<std::map<std::string, std::string>> Registry::alert_settings() {
  auto stmt = Statement::prepare(db_, "SELECT key, value FROM alert_settings");
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  auto rows = stmt->rows(
      [](const Statement& row) { return std::make_pair(row.column_text(0), row.column_text(1)); });
  if (!rows.is_ok()) {
    return rows.status();
  }
  return std::map<std::string, std::string>(rows->begin(), rows->end());
}

Status Registry::set_alert_setting(const std::string& key, const std::string& value) {
  if (key.empty()) {
    return bad_field("key", "must not be empty");
  }
  return run_sql(db_,
                 "INSERT INTO alert_settings (key, value) VALUES (?1, ?2) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                 key, value);
}

}  // namespace dq
