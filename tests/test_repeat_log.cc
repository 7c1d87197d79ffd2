// RepeatLog (common/core/repeat_log.h): a loop that meets the same error
// thousands of times writes it once, then once per window with the count.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/core/repeat_log.h"

TEST_CASE("the same error 14000 times: one line, then one line with the count per window") {
  std::vector<std::string> lines;
  dq::RepeatLog log(
      spdlog::level::err, 200,
      [&](spdlog::level::level_enum, const std::string& text) { lines.push_back(text); });
  int logged_now = 0;
  for (int i = 0; i < 14000; ++i) {
    logged_now += log.note("timer: shard a: READONLY") ? 1 : 0;
  }
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "timer: shard a: READONLY");
  CHECK(logged_now == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  CHECK(log.note("timer: shard a: READONLY"));
  REQUIRE(lines.size() == 2);
  CHECK(lines[1] == "timer: shard a: READONLY (repeated 14000 times in the last 1 s)");

  // Another error: the count of the first is written before it.
  log.note("timer: shard a: READONLY");
  log.note("timer: shard a: MISCONF");
  REQUIRE(lines.size() == 4);
  CHECK(lines[2].find("(repeated 1 time in the last") != std::string::npos);
  CHECK(lines[3] == "timer: shard a: MISCONF");

  // The loop works again: a count not yet written is, and the run ends.
  log.note("timer: shard a: MISCONF");
  CHECK(log.clear());
  REQUIRE(lines.size() == 5);
  CHECK(lines[4].rfind("timer: shard a: MISCONF (repeated 1 time in the last", 0) == 0);
  CHECK_FALSE(log.clear());
  CHECK(log.note("timer: shard a: MISCONF"));  // a new run logs at once
  CHECK(lines.size() == 6);
}
