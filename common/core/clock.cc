#include "common/core/clock.h"

#include <chrono>

#include "common/core/time_text.h"

namespace dq {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t monotonic_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

Result<int64_t> parse_datetime_ms(const std::string& text) {
  bool shaped = text.size() == 19 && text[4] == '-' && text[7] == '-' && text[10] == ' ' &&
                text[13] == ':' && text[16] == ':';
  if (!shaped) {
    return Status(Code::kInvalid, "time '" + text + "' is not YYYY-MM-DD HH:MM:SS");
  }
  auto due = parse_time_text(text);
  if (!due.is_ok()) {
    return due.status();
  }
  return due->ms;
}

}  // namespace dq
