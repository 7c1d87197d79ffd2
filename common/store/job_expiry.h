// When a job expires: after that it is never delivered (its record's tenth
// field; reserve.lua ends it as expired). Given at add or update as a ttl
// (seconds after the job is due, so a topic's default suits any delay) or
// an expire_at (a fixed time); fixed in the record as Redis ms when the
// job's due time is known, inside the script.
#pragma once

#include <cstdint>
#include <string>

namespace dq {

struct JobExpiry {
  enum class Kind { kNever, kAfterDue, kAt };
  Kind kind = Kind::kNever;
  int64_t ms = 0;  // kAfterDue: ms after the due time; kAt: epoch ms

  bool never() const { return kind == Kind::kNever; }
  // add.lua's and update.lua's argument: "", "ttl:<ms>" or "at:<ms>".
  std::string script_arg() const {
    switch (kind) {
      case Kind::kAfterDue:
        return "ttl:" + std::to_string(ms);
      case Kind::kAt:
        return "at:" + std::to_string(ms);
      case Kind::kNever:
        break;
    }
    return "";
  }
};

}  // namespace dq
