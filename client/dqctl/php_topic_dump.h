// Reading the PHP delay queue's topic table (MySQL `dq_topic`) from what an
// operator can export: a mysqldump (CREATE TABLE + INSERT statements, with
// or without a column list, extended inserts or one row per statement) or a
// CSV export with a header row (comma or semicolon separated, "" quotes).
// Only rows of dq_topic are read; other tables in the dump are skipped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/core/status.h"

namespace dq::ctl {

// One row: column name -> value as text (SQL NULL and CSV \N are "").
using PhpTopicRow = std::map<std::string, std::string>;

// Picks the format by content: a text holding "INSERT INTO" is a dump.
// kInvalid says where the text could not be read.
Result<std::vector<PhpTopicRow>> read_php_topic_rows(const std::string& text);

Result<std::vector<PhpTopicRow>> read_topic_dump(const std::string& sql);
Result<std::vector<PhpTopicRow>> read_topic_csv(const std::string& csv);

}  // namespace dq::ctl
