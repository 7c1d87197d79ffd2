#include "common/store/job.h"

#include <charconv>

#include "common/core/utf8.h"

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
    case JobState::kWaiting:
      return "waiting";
    case JobState::kDead:
      return "dead";
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
  if (colon == std::string_view::npos) {
    return false;
  }
  topic->assign(key.substr(0, colon));
  id->assign(key.substr(colon + 1));
  return true;
}

std::vector<std::string> split_after_keys(std::string_view joined) {
  std::vector<std::string> keys;
  size_t start = 0;
  while (start < joined.size()) {
    size_t end = joined.find('\n', start);
    if (end == std::string_view::npos) {
      end = joined.size();
    }
    keys.emplace_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return keys;
}

bool valid_topic(std::string_view topic) {
  if (topic.empty() || topic.size() > 64) {
    return false;
  }
  for (char c : topic) {
    if (!is_name_char(c)) {
      return false;
    }
  }
  return true;
}

// Walks the id as UTF-8: each lead byte fixes the sequence length, and the
// allowed range of the second byte rules out overlong forms (E0, F0),
// surrogates (ED) and code points past U+10FFFF (F4), and, after C2, the
// C1 controls U+0080-U+009F (well-formed UTF-8, but control characters).
bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 256) {
    return false;
  }
  size_t i = 0;
  while (i < id.size()) {
    unsigned char lead = static_cast<unsigned char>(id[i]);
    if (lead < 0x80) {
      if (lead < 0x20 || lead == 0x7F) {
        return false;
      }
      ++i;
      continue;
    }
    size_t length = utf8_sequence_length(id, i);
    if (length == 0) {
      return false;
    }
    // C2 80..9F encode the C1 controls: well-formed UTF-8, but control characters.
    if (lead == 0xC2 && static_cast<unsigned char>(id[i + 1]) < 0xA0) {
      return false;
    }
    i += length;
  }
  return true;
}

}  // namespace dq
