// Fuzz target: the one due-time parser (common/core/time_text.h) that the HTTP
// `at` and the legacy `fix_time` share. Any text or number: no crash, and a
// time it accepts is a real instant that round-trips through its own text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>

#include "common/core/json.h"
#include "common/core/time_text.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  setenv("TZ", "UTC", 1);  // local time without daylight saving: every local time exists once
  tzset();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto due = dq::parse_time_text(text);
  if (due.is_ok() && !due->relative) {
    // A fixed time printed as local "Y-m-d H:i:s" parses back to the same
    // second (the text form drops milliseconds).
    auto again = dq::parse_time_text(dq::format_local_datetime(due->ms));
    if (due->ms >= 0 && due->ms < 253402300800000LL) {  // years 1970..9999
      if (!again.is_ok() || again->ms != due->ms / 1000 * 1000) std::abort();
    }
  }
  dq::Json number = dq::Json::parse(text, nullptr, false);
  if (!number.is_discarded()) (void)dq::parse_time_value(number);
  return 0;
}
