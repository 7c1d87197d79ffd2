// What the tables beside topics (signing keys, schedules) share: filling
// each topic's list from one query over all of them, whose first column is
// the topic's name.
#pragma once

#include <functional>
#include <vector>

#include "common/core/status.h"
#include "common/registry/registry.h"
#include "common/registry/sqlite_db.h"

namespace dq {

// Steps `stmt` to its end and calls attach(topic, row) for each row whose
// first column names one of `topics` (rows of other topics are skipped).
Status attach_rows_to_topics(Statement& stmt, std::vector<Topic>* topics,
                             const std::function<void(Topic&, const Statement&)>& attach);

}  // namespace dq
