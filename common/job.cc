#include "common/job.h"

#include <charconv>

namespace dq {
namespace {

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

bool valid_topic(std::string_view topic) {
  if (topic.empty() || topic.size() > 64) return false;
  for (char c : topic) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

// Walks the id as UTF-8: each lead byte fixes the sequence length, and the
// allowed range of the second byte rules out overlong forms (E0, F0),
// surrogates (ED) and code points past U+10FFFF (F4), and, after C2, the
// C1 controls U+0080-U+009F (well-formed UTF-8, but control characters).
bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 256) return false;
  size_t i = 0;
  while (i < id.size()) {
    unsigned char lead = static_cast<unsigned char>(id[i]);
    if (lead < 0x80) {
      if (lead < 0x20 || lead == 0x7F) return false;
      ++i;
      continue;
    }
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
      if (lead == 0xC2) low = 0xA0;  // C2 80..9F encode the C1 controls
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return false;  // a continuation byte, C0/C1 (overlong) or F5..FF
    }
    if (i + length > id.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      unsigned char byte = static_cast<unsigned char>(id[i + k]);
      unsigned char min = k == 1 ? low : 0x80, max = k == 1 ? high : 0xBF;
      if (byte < min || byte > max) return false;
    }
    i += length;
  }
  return true;
}

}  // namespace dq
