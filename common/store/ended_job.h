// A gone job's final state, as its ended record keeps it (remember_end in
// common/store/lua/lib/prelude.lua): how it ended (done, dead, expired,
// deleted), when, its due time and attempts, and the detail the topic's
// history keeps: for a delivery the answer's status, its first bytes and
// the host that delivered it; else the reason. GET answers it instead of
// 404 for a topic with keep_done_days (docs/delivery.md, "History").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/core/json.h"

namespace dq {

struct EndedJob {
  std::string topic;
  std::string id;
  std::string state;  // "done", "dead", "expired" or "deleted"
  int64_t ended_at_ms = 0;
  int64_t due_at_ms = 0;
  int attempts = 0;
  // A delivery's (state done, with history): the answer's HTTP status, the
  // host that delivered it and the answer's first bytes.
  int last_status = 0;
  std::string delivered_by;
  std::string answer;
  std::string reason;  // dead, expired, deleted: why (with history)
};

// The record's text -> the job's end; nullopt when it is not one.
std::optional<EndedJob> parse_ended_record(std::string_view record);

// {"topic","id","state","ended_at_ms","due_at_ms","attempts"
//  (,"last_status","delivered_by","answer")(,"reason")}
Json ended_job_json(const EndedJob& job);

}  // namespace dq
