#include "common/job.h"

#include <charconv>

namespace dq {
namespace {

bool parse_int64(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  auto result = std::from_chars(text.data(), text.data() + text.size(), *out);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

}  // namespace

const char* state_name(JobState state) {
  switch (state) {
    case JobState::kDelayed:
      return "delayed";
    case JobState::kReady:
      return "ready";
    case JobState::kWorking:
      return "working";
    case JobState::kRetrying:
      return "retrying";
    case JobState::kDead:
      return "dead";
    case JobState::kHeld:
      return "held";
  }
  return "unknown";
}

std::string job_key(std::string_view topic, std::string_view id) {
  std::string key;
  key.reserve(topic.size() + 1 + id.size());
  key.append(topic).append(1, ':').append(id);
  return key;
}

bool split_job_key(std::string_view key, std::string* topic, std::string* id) {
  size_t colon = key.find(':');
  if (colon == std::string_view::npos) return false;
  topic->assign(key.substr(0, colon));
  id->assign(key.substr(colon + 1));
  return true;
}

void parse_error_entry(std::string_view entry, Job* job) {
  size_t bar = entry.find('|');
  if (bar == std::string_view::npos || !parse_int64(entry.substr(0, bar), &job->last_error_at_ms)) {
    job->last_error.assign(entry);
    return;
  }
  job->last_error.assign(entry.substr(bar + 1));
}

bool valid_topic(std::string_view topic) {
  if (topic.empty() || topic.size() > 64) return false;
  for (char c : topic) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!is_name_char(c) && c != ':' && c != '@') return false;
  }
  return true;
}

}  // namespace dq
