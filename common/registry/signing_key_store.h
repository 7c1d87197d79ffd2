// The topic_signing_keys table (sql/010_topic_signing.sql): read and written
// by Registry together with the topic they belong to.
#pragma once

#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/registry/registry.h"

struct sqlite3;

namespace dq {

// A topic's keys: kinds known, one current key per kind, readable secrets,
// and no signing of a GET topic (it has no body to sign: docs/callbacks.md).
Status validate_topic_signing(const Topic& topic);

// Fills each topic's signing_keys (one query for all of them), keys still
// live at now_ms only, oldest first (as stored, for keys made in the same ms).
Status attach_signing_keys(sqlite3* db, std::vector<Topic>* topics, int64_t now_ms);
// Makes the stored keys of topic.name exactly topic.signing_keys.
Status store_signing_keys(sqlite3* db, const Topic& topic);
// Drops every key of `topic` (the topic is being deleted).
Status delete_signing_keys(sqlite3* db, const std::string& topic);

}  // namespace dq
