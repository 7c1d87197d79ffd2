// Tests for common/registry/registry.h on a real SQLite file in a temp dir:
// migrations, topic CRUD, validation, error codes, and cross-handle visibility.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/registry/registry.h"
#include "common/registry/sql_migrations.h"

namespace {

using dq::Code;
using dq::Registry;
using dq::SqliteHandle;
using dq::SqliteStmtHandle;
using dq::Topic;

// A temp dir removed at the end of the test.
struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/dq-registry-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

std::unique_ptr<Registry> open_registry(const std::string& path) {
  auto opened = Registry::open(path);
  REQUIRE_MESSAGE(opened.is_ok(), opened.status().message());
  return std::move(*opened);
}

Topic sample_topic(const std::string& name) {
  Topic topic;
  topic.name = name;
  topic.callback_url = "http://127.0.0.1:8080/cb";
  return topic;
}

// Reads one value with a separate raw connection (what another process sees).
std::string query_text(const std::string& path, const char* sql) {
  sqlite3* raw_db = nullptr;
  int opened = sqlite3_open_v2(path.c_str(), &raw_db, SQLITE_OPEN_READONLY, nullptr);
  SqliteHandle db(raw_db);
  REQUIRE(opened == SQLITE_OK);
  sqlite3_stmt* raw_stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db.get(), sql, -1, &raw_stmt, nullptr) == SQLITE_OK);
  SqliteStmtHandle stmt(raw_stmt);
  REQUIRE(sqlite3_step(stmt.get()) == SQLITE_ROW);
  const unsigned char* text = sqlite3_column_text(stmt.get(), 0);
  return text != nullptr ? reinterpret_cast<const char*>(text) : "";
}

int64_t query_int(const std::string& path, const char* sql) {
  return std::stoll(query_text(path, sql));
}

int latest_migration() {
  int latest = 0;
  for (const auto& migration : dq::kSqlMigrations) {
    latest = std::max(latest, migration.version);
  }
  return latest;
}

// Expects validate_topic to fail with kInvalid and a message starting with the field.
void expect_invalid(const Topic& topic, const std::string& field) {
  dq::Status status = dq::validate_topic(topic);
  CHECK(status.code() == Code::kInvalid);
  CHECK_MESSAGE(status.message().rfind(field + ":", 0) == 0, status.message());
}

}  // namespace

TEST_CASE("open migrates once; reopening is idempotent and keeps data") {
  TempDir dir;
  std::string path = dir.file("dq.db");
  {
    auto registry = open_registry(path);
    CHECK(registry->add_topic(sample_topic("orders")).is_ok());
  }
  CHECK(query_int(path, "PRAGMA user_version") == latest_migration());
  {
    auto again = open_registry(path);  // migrations must not run twice (CREATE TABLE would fail)
    auto topics = again->list_topics();
    REQUIRE(topics.is_ok());
    REQUIRE(topics->size() == 1);
    CHECK(topics->front().name == "orders");
  }
  CHECK(query_int(path, "PRAGMA user_version") == latest_migration());
  CHECK(query_int(path,
                  "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'topics'") ==
        1);
}

TEST_CASE("the database is in WAL mode") {
  TempDir dir;
  std::string path = dir.file("dq.db");
  auto registry = open_registry(path);
  CHECK(query_text(path, "PRAGMA journal_mode") == "wal");
}

TEST_CASE("several handles opening a fresh database at once all succeed") {
  TempDir dir;
  std::string path = dir.file("dq.db");
  std::vector<std::thread> threads;
  std::vector<int> ok(6, 0);
  for (size_t i = 0; i < ok.size(); ++i) {
    threads.emplace_back([&, i] {
      auto opened = Registry::open(path);
      ok[i] = opened.is_ok() && (*opened)->list_topics().is_ok() ? 1 : 0;
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (int value : ok) {
    CHECK(value == 1);
  }
  CHECK(query_int(path, "PRAGMA user_version") == latest_migration());
}

TEST_CASE("topic CRUD round-trips every field") {
  TempDir dir;
  auto registry = open_registry(dir.file("dq.db"));

  Topic topic = sample_topic("pay.notify-1");
  topic.method = "GET";
  topic.timeout_ms = 1500;
  topic.default_delay_s = 30;
  topic.max_attempts = 7;
  topic.priority = 1;
  topic.retry_ms = "1000,3000,5000";
  topic.alert_emails = "ops@example.com,dev@example.com";
  topic.creator = "alice";
  topic.online = false;
  REQUIRE(registry->add_topic(topic).is_ok());

  auto got = registry->get_topic("pay.notify-1");
  REQUIRE(got.is_ok());
  CHECK(got->callback_url == topic.callback_url);
  CHECK(got->method == "GET");
  CHECK(got->timeout_ms == 1500);
  CHECK(got->default_delay_s == 30);
  CHECK(got->max_attempts == 7);
  CHECK(got->priority == 1);
  CHECK(got->retry_ms == "1000,3000,5000");
  CHECK(got->alert_emails == "ops@example.com,dev@example.com");
  CHECK(got->creator == "alice");
  CHECK_FALSE(got->online);
  CHECK(got->created_at_ms > 0);
  CHECK(got->updated_at_ms >= got->created_at_ms);

  Topic changed = *got;
  changed.callback_url = "https://example.com/v2";
  changed.online = true;
  changed.priority = 3;
  REQUIRE(registry->update_topic(changed).is_ok());
  auto updated = registry->get_topic("pay.notify-1");
  REQUIRE(updated.is_ok());
  CHECK(updated->callback_url == "https://example.com/v2");
  CHECK(updated->online);
  CHECK(updated->priority == 3);
  CHECK(updated->created_at_ms == got->created_at_ms);

  REQUIRE(registry->add_topic(sample_topic("a-first")).is_ok());
  auto all = registry->list_topics();
  REQUIRE(all.is_ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].name == "a-first");  // sorted by name
  CHECK((*all)[1].name == "pay.notify-1");

  REQUIRE(registry->delete_topic("pay.notify-1").is_ok());
  CHECK(registry->get_topic("pay.notify-1").status().code() == Code::kNotFound);
  auto remaining = registry->list_topics();
  REQUIRE(remaining.is_ok());
  CHECK(remaining->size() == 1);
}

TEST_CASE("conflict and not-found codes") {
  TempDir dir;
  auto registry = open_registry(dir.file("dq.db"));
  REQUIRE(registry->add_topic(sample_topic("orders")).is_ok());

  dq::Status dup = registry->add_topic(sample_topic("orders"));
  CHECK(dup.code() == Code::kConflict);
  CHECK(dup.message().find("orders") != std::string::npos);

  CHECK(registry->get_topic("nope").status().code() == Code::kNotFound);
  CHECK(registry->update_topic(sample_topic("nope")).code() == Code::kNotFound);
  CHECK(registry->delete_topic("nope").code() == Code::kNotFound);

  Topic bad = sample_topic("orders");
  bad.priority = 9;
  CHECK(registry->update_topic(bad).code() == Code::kInvalid);
  CHECK(registry->get_topic("orders")->priority == 2);  // unchanged
  Topic bad_new = sample_topic("fresh");
  bad_new.method = "PUT";
  CHECK(registry->add_topic(bad_new).code() == Code::kInvalid);
  CHECK(registry->get_topic("fresh").status().code() == Code::kNotFound);
}

TEST_CASE("validation names the bad field") {
  CHECK(dq::validate_topic(sample_topic("ok")).is_ok());

  Topic t = sample_topic("bad:name");
  expect_invalid(t, "name");
  expect_invalid(sample_topic(""), "name");
  expect_invalid(sample_topic(std::string(65, 'a')), "name");
  CHECK(dq::validate_topic(sample_topic(std::string(64, 'a'))).is_ok());

  for (const char* url : {"", "ftp://host/x", "http://", "http:///path", "https://:80/x",
                          "http://host:0/", "http://host:70000/", "http://host:ab/",
                          "http://ho st/", "127.0.0.1:8080/cb", "http://[::1/x"}) {
    t = sample_topic("ok");
    t.callback_url = url;
    INFO(url);
    expect_invalid(t, "callback_url");
  }
  for (const char* url : {"http://a", "https://example.com:8443/x?y=1", "http://user:pw@host/",
                          "http://[::1]:8080/cb", "http://localhost?x"}) {
    t = sample_topic("ok");
    t.callback_url = url;
    INFO(url);
    CHECK(dq::validate_topic(t).is_ok());
  }

  t = sample_topic("ok");
  t.method = "post";
  expect_invalid(t, "method");

  t = sample_topic("ok");
  t.timeout_ms = 0;
  expect_invalid(t, "timeout_ms");
  t.timeout_ms = 600001;
  expect_invalid(t, "timeout_ms");
  t.timeout_ms = 600000;
  CHECK(dq::validate_topic(t).is_ok());

  t = sample_topic("ok");
  t.default_delay_s = -1;
  expect_invalid(t, "default_delay_s");
  t.default_delay_s = 20LL * 366 * 24 * 3600;
  expect_invalid(t, "default_delay_s");
  t.default_delay_s = 365LL * 24 * 3600;
  CHECK(dq::validate_topic(t).is_ok());

  t = sample_topic("ok");
  t.max_attempts = -1;
  expect_invalid(t, "max_attempts");
  t.max_attempts = 1001;
  expect_invalid(t, "max_attempts");
  t.max_attempts = 1000;
  CHECK(dq::validate_topic(t).is_ok());

  t = sample_topic("ok");
  t.priority = 0;
  expect_invalid(t, "priority");
  t.priority = 4;
  expect_invalid(t, "priority");

  for (const char* retry : {"0", "1,,2", "1,2,", "-5", "1 000", "abc", "99999999999999999999"}) {
    t = sample_topic("ok");
    t.retry_ms = retry;
    INFO(retry);
    expect_invalid(t, "retry_ms");
  }
  t = sample_topic("ok");
  t.retry_ms = "1000";
  CHECK(dq::validate_topic(t).is_ok());

  for (const char* emails : {"nobody", "@host", "user@", "a@b@c", "a@b,,c@d", "a@b, c@d", "a@b,"}) {
    t = sample_topic("ok");
    t.alert_emails = emails;
    INFO(emails);
    expect_invalid(t, "alert_emails");
  }
  t = sample_topic("ok");
  t.alert_emails = "a@b,ops.team@example.co.uk";
  CHECK(dq::validate_topic(t).is_ok());
}

TEST_CASE("a second handle sees the first one's changes without reopening") {
  TempDir dir;
  std::string path = dir.file("dq.db");
  auto writer = open_registry(path);
  auto reader = open_registry(path);
  auto before = reader->list_topics();
  REQUIRE(before.is_ok());
  CHECK(before->empty());

  REQUIRE(writer->add_topic(sample_topic("orders")).is_ok());
  auto after_add = reader->get_topic("orders");
  REQUIRE(after_add.is_ok());
  CHECK(after_add->online);

  Topic offline = *after_add;
  offline.online = false;
  REQUIRE(writer->update_topic(offline).is_ok());
  CHECK_FALSE(reader->get_topic("orders")->online);

  REQUIRE(writer->delete_topic("orders").is_ok());
  CHECK(reader->get_topic("orders").status().code() == Code::kNotFound);
}

TEST_CASE("alert settings and extra shards") {
  TempDir dir;
  std::string path = dir.file("dq.db");
  auto registry = open_registry(path);
  auto empty = registry->alert_settings();
  REQUIRE(empty.is_ok());
  CHECK(empty->empty());
  REQUIRE(registry->set_alert_setting("smtp_host", "mail.local").is_ok());
  REQUIRE(registry->set_alert_setting("smtp_host", "mail2.local").is_ok());  // overwrite
  REQUIRE(registry->set_alert_setting("smtp_port", "25").is_ok());
  CHECK(registry->set_alert_setting("", "x").code() == Code::kInvalid);
  auto settings = registry->alert_settings();
  REQUIRE(settings.is_ok());
  CHECK(settings->size() == 2);
  CHECK(settings->at("smtp_host") == "mail2.local");

  auto none = registry->list_extra_shards();
  REQUIRE(none.is_ok());
  CHECK(none->empty());
  // The admin helper owns writing shards; insert directly as it would.
  auto db = dq::open_sqlite(path);
  REQUIRE(db.is_ok());
  REQUIRE(sqlite3_exec(db->get(),
                       "INSERT INTO shards (address, password, enabled, created_at_ms) VALUES "
                       "('10.0.0.1:6379', '', 1, 1), ('10.0.0.2:6379', 'pw', 1, 2), "
                       "('10.0.0.3:6379', '', 0, 3)",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  db->reset();
  auto shards = registry->list_extra_shards();
  REQUIRE(shards.is_ok());
  REQUIRE(shards->size() == 2);
  CHECK((*shards)[0] == "10.0.0.1:6379");
  CHECK((*shards)[1] == "10.0.0.2:6379:pw");
}

TEST_CASE("missing parent folders are created; unopenable paths are unavailable") {
  TempDir dir;
  auto created = Registry::open(dir.file("var/sub/dq.db"));
  CHECK(created.is_ok());
  CHECK(std::filesystem::exists(dir.file("var/sub/dq.db")));

  std::string garbage = dir.file("not-a-db");
  FILE* file = fopen(garbage.c_str(), "w");
  REQUIRE(file != nullptr);
  fputs("this is not an sqlite database, just some text that is long enough to matter\n", file);
  fclose(file);
  auto bad = Registry::open(garbage);
  CHECK_FALSE(bad.is_ok());
  CHECK(bad.status().code() == Code::kUnavailable);

  auto under_file = Registry::open(garbage + "/sub/dq.db");  // a file where a folder must be
  CHECK_FALSE(under_file.is_ok());
  CHECK(under_file.status().code() == Code::kUnavailable);
}

TEST_CASE("topic caps: max_in_flight, max_rate, max_burst round-trip and are checked") {
  TempDir dir;
  auto registry = open_registry(dir.file("dq.db"));
  Topic topic = sample_topic("capped");
  topic.max_in_flight = 2;
  topic.max_rate = 50;
  topic.max_burst = 10;
  REQUIRE(registry->add_topic(topic).is_ok());
  auto got = registry->get_topic("capped");
  REQUIRE(got.is_ok());
  CHECK(got->max_in_flight == 2);
  CHECK(got->max_rate == 50);
  CHECK(got->max_burst == 10);
  Topic changed = *got;
  changed.max_in_flight = 0;
  changed.max_burst = 0;
  REQUIRE(registry->update_topic(changed).is_ok());
  CHECK(registry->get_topic("capped")->max_in_flight == 0);
  CHECK(registry->get_topic("capped")->max_burst == 0);
  CHECK(registry->get_topic("capped")->max_rate == 50);
  CHECK(registry->get_topic("uncapped").status().code() == dq::Code::kNotFound);

  Topic t = sample_topic("ok");
  t.max_in_flight = -1;
  expect_invalid(t, "max_in_flight");
  t.max_in_flight = 100001;
  expect_invalid(t, "max_in_flight");
  t = sample_topic("ok");
  t.max_rate = -1;
  expect_invalid(t, "max_rate");
  t = sample_topic("ok");
  t.max_burst = 5;  // a burst without a rate means nothing
  expect_invalid(t, "max_burst");
  t.max_rate = 1;
  CHECK(dq::validate_topic(t).is_ok());
  // A bad cap changes nothing.
  Topic bad = *registry->get_topic("capped");
  bad.max_rate = -5;
  CHECK(registry->update_topic(bad).code() == dq::Code::kInvalid);
  CHECK(registry->get_topic("capped")->max_rate == 50);
}
