// What a topic does with a job found much later than it was due (a consumer
// outage, a backlog): `late_policy`, one of
//   "deliver"          deliver it however late (the default)
//   "dead_after:S"     more than S seconds late: to the dead letters, reason "late"
//   "drop_after:S"     more than S seconds late: dropped (and counted)
// S is whole seconds, 1 to 315360000 (ten years).
#pragma once

#include <cstdint>
#include <string>

#include "common/core/status.h"

namespace dq {

enum class LateAction { kDeliver, kDead, kDrop };

// The last error a job dead-lettered by the policy carries.
inline constexpr const char* kLateReason = "late";

class LatePolicy {
 public:
  LatePolicy() = default;  // deliver
  // kInvalid naming the accepted forms.
  static Result<LatePolicy> parse(const std::string& text);

  // The text parse() reads back ("deliver", "dead_after:60").
  std::string text() const;
  // For a job due at `due_ms` found ready at `found_ms`: more than the
  // policy's seconds between them makes it late; exactly that many does not.
  LateAction decide(int64_t due_ms, int64_t found_ms) const;
  // What the reserve script is told (common/store/lua/reserve.lua): "" for
  // deliver, "dead:<ms>" or "drop:<ms>".
  std::string script_arg() const;

 private:
  LateAction when_late_ = LateAction::kDeliver;
  int64_t after_ms_ = 0;
};

// A topic's late_policy text as reserve.lua takes it (script_arg); "deliver"
// (most topics) without parsing. A policy the registry refused never gets
// here; an unreadable one delivers.
std::string late_policy_arg(const std::string& policy);

}  // namespace dq
