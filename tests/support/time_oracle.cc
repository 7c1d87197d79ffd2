// Implements tests/support/time_oracle.h with run_program.
#include "tests/support/time_oracle.h"

#include <doctest/doctest.h>

#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

namespace dq::test {

Json ask_time_oracle(const Json& request) {
  std::string dir = make_temp_dir("dq-time-oracle");
  RunResult run = run_program({"/usr/bin/python3", DQ_SOURCE_DIR "/tests/support/time_oracle.py"},
                              dir, request.dump());
  remove_dir(dir);
  REQUIRE_MESSAGE(run.exit_code == 0,
                  "tests/support/time_oracle.py failed (apt-get install python3-croniter "
                  "tzdata): "
                      << run.err);
  Json answer = Json::parse(run.out, nullptr, false);
  REQUIRE_MESSAGE(!answer.is_discarded(), "time_oracle.py answered: " << run.out);
  return answer;
}

}  // namespace dq::test
