#include "common/store/end_memory.h"

#include "common/core/clock.h"

namespace dq {
namespace {

// At most `most` bytes of `text`, never ending inside a UTF-8 sequence.
std::string utf8_prefix(const std::string& text, size_t most) {
  if (text.size() <= most) {
    return text;
  }
  size_t end = most;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;  // text[end] continues a sequence: cut before the sequence starts
  }
  return text.substr(0, end);
}

}  // namespace

std::string EndMemory::arg() const {
  if (remembers_nothing()) {
    return "0";
  }
  return std::to_string(dedup_ms) + ":" + std::to_string(keep_ms);
}

EndMemory end_memory_of(int64_t dedup_window_s, int64_t keep_done_days) {
  return {dedup_window_s * 1000, keep_done_days * kDayMs};
}

std::string delivery_detail(const EndMemory& memory, int status, const std::string& host,
                            const std::string& answer) {
  if (!memory.keeps_history()) {
    return "";
  }
  return std::to_string(status) + "|" + host + "|" + utf8_prefix(answer, kHistoryAnswerBytes);
}

}  // namespace dq
