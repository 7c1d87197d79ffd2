#include "common/store/ended_job.h"

#include <charconv>
#include <vector>

#include "common/core/utf8.h"

namespace dq {
namespace {

bool read_int(std::string_view text, int64_t* out) {
  auto result = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && result.ec == std::errc() && result.ptr == text.data() + text.size();
}

// Splits off the first `count` '|'-separated fields; the rest (which may
// hold '|') is the last element.
std::vector<std::string_view> split_fields(std::string_view text, size_t count) {
  std::vector<std::string_view> fields;
  while (fields.size() < count) {
    size_t bar = text.find('|');
    if (bar == std::string_view::npos) {
      break;
    }
    fields.push_back(text.substr(0, bar));
    text.remove_prefix(bar + 1);
  }
  fields.push_back(text);
  return fields;
}

// The answer's bytes as text: a byte that starts no well-formed UTF-8
// sequence (a receiver's binary answer) shows as '?'.
std::string shown_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    if (static_cast<unsigned char>(bytes[at]) < 0x80) {
      out += bytes[at++];
      continue;
    }
    size_t length = utf8_sequence_length(bytes, at);
    if (length == 0) {
      out += '?';
      ++at;
    } else {
      out.append(bytes.substr(at, length));
      at += length;
    }
  }
  return out;
}

const char* state_of_how(char how) {
  switch (how) {
    case 'a':
      return "done";
    case 'x':
      return "dead";
    case 'e':
      return "expired";
    case 'd':
      return "deleted";
    default:
      return nullptr;
  }
}

}  // namespace

std::optional<EndedJob> parse_ended_record(std::string_view record) {
  // "how|ended|due|print|dedup until|attempts|detail" (an older record has
  // only the first four).
  std::vector<std::string_view> fields = split_fields(record, 6);
  if (fields.size() < 4 || fields[0].size() != 1) {
    return std::nullopt;
  }
  const char* state = state_of_how(fields[0][0]);
  EndedJob job;
  if (state == nullptr || !read_int(fields[1], &job.ended_at_ms) ||
      !read_int(fields[2], &job.due_at_ms)) {
    return std::nullopt;
  }
  job.state = state;
  if (fields.size() == 7) {
    int64_t attempts = 0;
    if (read_int(fields[5], &attempts)) {
      job.attempts = static_cast<int>(attempts);
    }
    std::string_view detail = fields[6];
    if (job.state == "done") {
      std::vector<std::string_view> parts = split_fields(detail, 2);
      int64_t status = 0;
      if (parts.size() == 3 && read_int(parts[0], &status)) {
        job.last_status = static_cast<int>(status);
        job.delivered_by.assign(parts[1]);
        job.answer.assign(parts[2]);
      }
    } else {
      job.reason.assign(detail);
    }
  }
  return job;
}

Json ended_job_json(const EndedJob& job) {
  Json out{{"topic", job.topic},         {"id", job.id},
           {"state", job.state},         {"ended_at_ms", job.ended_at_ms},
           {"due_at_ms", job.due_at_ms}, {"attempts", job.attempts}};
  if (job.last_status != 0) {
    out["last_status"] = job.last_status;
    out["delivered_by"] = job.delivered_by;
    out["answer"] = shown_text(job.answer);
  }
  if (!job.reason.empty()) {
    out["reason"] = shown_text(job.reason);
  }
  return out;
}

}  // namespace dq
