// The topic_schedules table (sql/021_topic_schedules.sql): read and written
// by Registry together with the topic the schedules belong to, and carried
// in the topic's row of the shared registry (common/registry/registry_rows.h).
#pragma once

#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

struct sqlite3;

namespace dq {

// Fills each topic's schedules (one query for all of them), oldest first.
Status attach_schedules(sqlite3* db, std::vector<Topic>* topics);
// Makes the stored schedules of topic.name exactly topic.schedules. The
// caller holds a transaction.
Status store_schedules(sqlite3* db, const Topic& topic);
// Drops every schedule of `topic` (the topic is being deleted).
Status delete_schedules(sqlite3* db, const std::string& topic);

// A topic row's "schedules" member: every column of each, oldest first (so
// the same schedules hash the same on every host).
Result<Json> read_schedules_row(sqlite3* db, const std::string& topic);
// Makes the stored schedules exactly `rows` (none when it is no array).
Status write_schedules_row(sqlite3* db, const std::string& topic, const Json& rows);

}  // namespace dq
