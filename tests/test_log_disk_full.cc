// A full log disk costs log lines, never the process: the daily log files
// are pointed at /dev/full (every write fails with ENOSPC, as on a full
// disk), and logging goes on, counts the dropped lines in the host metrics,
// and still echoes err lines to stderr.
#include <doctest/doctest.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <string>

#include "common/core/log.h"
#include "common/core/shared_metrics.h"
#include "tests/support/redis_server.h"

namespace {

uint64_t dropped(const std::string& kind) {
  uint64_t count = 0;
  std::string wanted = dq::SharedMetrics::key({"log_dropped", kind});
  dq::SharedMetrics::instance().for_each([&](std::string_view key, const dq::HistogramView& view) {
    if (key == wanted) {
      count = view.count;
    }
  });
  return count;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof(text), "%Y%m%d", &local);
  return text;
}

}  // namespace

TEST_CASE("log files on a full disk: lines are dropped and counted, nothing throws") {
  std::string dir = dq::test::make_temp_dir("dq-logfull");
  for (const char* kind : {"request", "notify", "err"}) {
    std::filesystem::create_symlink("/dev/full", dir + "/" + kind + "_" + today() + ".log");
  }
  dq::init_logging(dir, "info", "dq-test");
  uint64_t request_before = dropped("request");
  uint64_t err_before = dropped("err");
  for (int i = 0; i < 50; ++i) {
    CHECK_NOTHROW(dq::request_log().info("add t/{} 201", i));
    CHECK_NOTHROW(dq::notify_log().info("delivered t/{}", i));
  }
  CHECK_NOTHROW(dq::err_log().error("an error line that still reaches stderr"));
  CHECK(dropped("request") - request_before == 50);
  CHECK(dropped("notify") >= 50);
  CHECK(dropped("err") - err_before == 1);
  dq::init_logging("", "info", "dq-test");  // back to stderr before the dir goes
  dq::test::remove_dir(dir);
}

TEST_CASE("log files on a writable disk: nothing is counted as dropped") {
  std::string dir = dq::test::make_temp_dir("dq-logok");
  dq::init_logging(dir, "info", "dq-test");
  uint64_t before = dropped("request");
  for (int i = 0; i < 20; ++i) {
    dq::request_log().info("add t/{} 201", i);
  }
  CHECK(dropped("request") == before);
  CHECK(std::filesystem::file_size(dir + "/request_" + today() + ".log") > 0);
  dq::init_logging("", "info", "dq-test");
  dq::test::remove_dir(dir);
}
