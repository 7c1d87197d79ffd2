// Implements common/core/late_policy.h.
#include "common/core/late_policy.h"

#include <cctype>

namespace dq {
namespace {

constexpr int64_t kLongestS = 315360000;  // ten years, as far ahead as an add may be due

}  // namespace

Result<LatePolicy> LatePolicy::parse(const std::string& text) {
  LatePolicy policy;
  if (text == "deliver") {
    return policy;
  }
  static const std::pair<const char*, LateAction> kPolicyForms[] = {
      {"dead_after:", LateAction::kDead}, {"drop_after:", LateAction::kDrop}};
  for (const auto& [prefix, action] : kPolicyForms) {
    std::string start(prefix);
    if (text.compare(0, start.size(), start) != 0) {
      continue;
    }
    std::string digits = text.substr(start.size());
    int64_t seconds = 0;
    bool whole = !digits.empty() && digits.size() <= 10;
    for (char c : digits) {
      whole = whole && isdigit(static_cast<unsigned char>(c));
      seconds = whole ? seconds * 10 + (c - '0') : 0;
    }
    if (!whole || seconds < 1 || seconds > kLongestS) {
      std::string why = "late_policy '" + text + "': ";
      why += start + " needs whole seconds from 1 to 315360000 (ten years)";
      return Status(Code::kInvalid, why);
    }
    policy.when_late_ = action;
    policy.after_ms_ = seconds * 1000;
    return policy;
  }
  return Status(Code::kInvalid, "late_policy '" + text +
                                    "' is not understood: use deliver, dead_after:SECONDS or "
                                    "drop_after:SECONDS");
}

std::string LatePolicy::text() const {
  switch (when_late_) {
    case LateAction::kDead:
      return "dead_after:" + std::to_string(after_ms_ / 1000);
    case LateAction::kDrop:
      return "drop_after:" + std::to_string(after_ms_ / 1000);
    case LateAction::kDeliver:
      break;
  }
  return "deliver";
}

std::string LatePolicy::script_arg() const {
  switch (when_late_) {
    case LateAction::kDead:
      return "dead:" + std::to_string(after_ms_);
    case LateAction::kDrop:
      return "drop:" + std::to_string(after_ms_);
    case LateAction::kDeliver:
      break;
  }
  return "";
}

LateAction LatePolicy::decide(int64_t due_ms, int64_t found_ms) const {
  if (when_late_ == LateAction::kDeliver || found_ms - due_ms <= after_ms_) {
    return LateAction::kDeliver;
  }
  return when_late_;
}

std::string late_policy_arg(const std::string& policy) {
  if (policy == "deliver" || policy.empty()) {
    return "";
  }
  auto parsed = LatePolicy::parse(policy);
  return parsed.is_ok() ? parsed->script_arg() : "";
}

}  // namespace dq
