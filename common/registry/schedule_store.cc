// Implements common/registry/schedule_store.h through bound statements only.
#include "common/registry/schedule_store.h"

#include "common/registry/sqlite_db.h"
#include "common/registry/topic_attach.h"

namespace dq {
namespace {

constexpr const char* kColumns = "spec, id, tz, body, catch_up, paused, created_at_ms";

TopicSchedule read_schedule(const Statement& row, int first) {
  TopicSchedule schedule;
  int64_t paused = 0;
  schedule.spec = row.column_text(first);
  schedule.id = row.column_text(first + 1);
  schedule.tz = row.column_text(first + 2);
  schedule.body = row.column_text(first + 3);
  schedule.catch_up = row.column_text(first + 4);
  paused = row.column_int(first + 5);
  schedule.paused = paused != 0;
  schedule.created_at_ms = row.column_int(first + 6);
  return schedule;
}

Result<std::vector<TopicSchedule>> schedules_of(sqlite3* db, const std::string& topic) {
  std::string sql = std::string("SELECT ") + kColumns +
                    " FROM topic_schedules WHERE topic = ?1 ORDER BY created_at_ms, spec";
  auto stmt = Statement::prepare(db, sql.c_str(), topic);
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  return stmt->rows([](const Statement& row) { return read_schedule(row, 0); });
}

}  // namespace

Status attach_schedules(sqlite3* db, std::vector<Topic>* topics) {
  std::string sql = std::string("SELECT topic, ") + kColumns +
                    " FROM topic_schedules ORDER BY created_at_ms, spec";
  auto stmt = Statement::prepare(db, sql.c_str());
  if (!stmt.is_ok()) {
    return stmt.status();
  }
  for (Topic& topic : *topics) {
    topic.schedules.clear();
  }
  return attach_rows_to_topics(*stmt, topics, [](Topic& topic, const Statement& row) {
    topic.schedules.push_back(read_schedule(row, 1));
  });
}

Status delete_schedules(sqlite3* db, const std::string& topic) {
  return run_sql(db, "DELETE FROM topic_schedules WHERE topic = ?1", topic);
}

Status store_schedules(sqlite3* db, const Topic& topic) {
  Status status = delete_schedules(db, topic.name);
  for (const TopicSchedule& schedule : topic.schedules) {
    if (!status.is_ok()) {
      return status;
    }
    status = run_sql(db,
                     "INSERT INTO topic_schedules (topic, spec, id, tz, body, catch_up, paused, "
                     "created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                     topic.name, schedule.spec, schedule.id, schedule.tz, schedule.body,
                     schedule.catch_up, int64_t{schedule.paused ? 1 : 0}, schedule.created_at_ms);
  }
  return status;
}

Result<Json> read_schedules_row(sqlite3* db, const std::string& topic) {
  auto schedules = schedules_of(db, topic);
  if (!schedules.is_ok()) {
    return schedules.status();
  }
  Json rows = Json::array();
  for (const TopicSchedule& schedule : *schedules) {
    rows.push_back({{"spec", schedule.spec},
                    {"id", schedule.id},
                    {"tz", schedule.tz},
                    {"body", schedule.body},
                    {"catch_up", schedule.catch_up},
                    {"paused", schedule.paused ? 1 : 0},
                    {"created_at_ms", schedule.created_at_ms}});
  }
  return rows;
}

Status write_schedules_row(sqlite3* db, const std::string& topic, const Json& rows) {
  Topic holder;
  holder.name = topic;
  if (rows.is_array()) {
    for (const Json& row : rows) {
      if (!row.is_object()) {
        continue;
      }
      TopicSchedule schedule;
      schedule.spec = row.value("spec", std::string());
      schedule.id = row.value("id", std::string());
      schedule.tz = row.value("tz", std::string());
      schedule.body = row.value("body", std::string("{}"));
      schedule.catch_up = row.value("catch_up", std::string("one"));
      schedule.paused = row.value("paused", 0) != 0;
      schedule.created_at_ms = row.value("created_at_ms", int64_t{0});
      holder.schedules.push_back(std::move(schedule));
    }
  }
  return store_schedules(db, holder);
}

}  // namespace dq
