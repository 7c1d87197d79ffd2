#include "common/store/job_meta.h"

#include <charconv>
#include <vector>

namespace dq {
namespace {

bool parse_int64(std::string_view text, int64_t* out) {
  if (text.empty()) {
    return false;
  }
  auto result = std::from_chars(text.data(), text.data() + text.size(), *out);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

}  // namespace

bool state_of_letter(char letter, JobState* state) {
  switch (letter) {
    case 'd':
      *state = JobState::kDelayed;
      return true;
    case 'r':
      *state = JobState::kReady;
      return true;
    case 'w':
      *state = JobState::kWorking;
      return true;
    case 'y':
      *state = JobState::kRetrying;
      return true;
    case 'x':
      *state = JobState::kDead;
      return true;
    case 'b':
      *state = JobState::kWaiting;
      return true;
    case 'h':
      // A copy store v3 held until another shard was asked: pending, and not
      // delivered, until the store upgrade settles it (store_upgrade.h).
      *state = JobState::kDelayed;
      return true;
    default:
      return false;
  }
}

bool body_is_inline(std::string_view record) { return record.find('\n') != std::string_view::npos; }

bool parse_job_meta(std::string_view record, Job* job, std::string* lease) {
  const size_t newline = record.find('\n');
  const std::string_view text = record.substr(0, newline);
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (fields.size() < 11) {  // an eleventh field makes it malformed
    size_t bar = text.find('|', start);
    if (bar == std::string_view::npos) {
      fields.push_back(text.substr(start));
      break;
    }
    fields.push_back(text.substr(start, bar - start));
    start = bar + 1;
  }
  if (fields.size() < 7 || fields.size() > 10 || fields[0].size() != 1) {
    return false;
  }
  if (!state_of_letter(fields[0][0], &job->state)) {
    return false;
  }
  int64_t attempts = 0;
  if (!parse_int64(fields[1], &attempts) || !parse_int64(fields[2], &job->due_at_ms) ||
      !parse_int64(fields[3], &job->created_at_ms)) {
    return false;
  }
  job->attempts = static_cast<int>(attempts);
  int64_t deferrals = 0;  // an eighth field only once a Retry-After was honoured
  if (fields.size() >= 8 && !parse_int64(fields[7], &deferrals)) {
    return false;
  }
  job->deferrals = static_cast<int>(deferrals);
  job->first_attempt_ms = 0;  // a ninth field once the job was first reserved
  if (fields.size() >= 9 && !(fields.size() == 10 && fields[8].empty()) &&
      !parse_int64(fields[8], &job->first_attempt_ms)) {
    return false;
  }
  job->expires_at_ms = 0;  // a tenth field for a job with a ttl or expire_at
  if (fields.size() == 10 && !parse_int64(fields[9], &job->expires_at_ms)) {
    return false;
  }
  job->incarnation.assign(fields[4]);
  // A pending job has no lease: promote.lua writes 'window' there when it
  // holds the job for its topic's delivery window.
  job->held_by_window = (job->state == JobState::kDelayed || job->state == JobState::kRetrying) &&
                        fields[5] == "window";
  if (lease != nullptr) {
    lease->assign(fields[5]);
  }
  if (newline != std::string_view::npos) {
    job->body.assign(record.substr(newline + 1));
  }
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

}  // namespace dq
