// The fault suite: breaks dq the way production does while a
// load runs, then counts every job. One table row per scenario:
// accepted / delivered / duplicated / lost / early.
//   fault_suite                 every scenario once (ctest, CI)
//   fault_suite --soak MINUTES  every scenario again and again for that long
//   fault_suite --only TEXT     only scenarios whose name contains TEXT
// The table also goes to fault_table.txt in the working dir.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/fault/scenarios.h"

namespace {

double soak_minutes = 0;
std::string only;

void print(const std::string& line, std::ofstream& table) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  table << line << "\n" << std::flush;
}

}  // namespace

TEST_CASE("fault scenarios: nothing accepted is lost or early") {
  using Clock = std::chrono::steady_clock;
  auto end = Clock::now() + std::chrono::seconds(static_cast<int64_t>(soak_minutes * 60));
  std::ofstream table("fault_table.txt");
  print(dq::test::table_header(), table);
  int round = 0;
  do {
    for (const auto& scenario : dq::test::all_scenarios()) {
      if (!only.empty() && scenario.name.find(only) == std::string::npos) {
        continue;
      }
      dq::test::TallyRow row;
      try {
        row = dq::test::run_scenario(scenario, round);
      } catch (...) {
        // A REQUIRE of the harness failed (and was counted); go on with the rest.
        row.scenario = scenario.name;
        row.note = "ABORTED: the world could not be set up or healed";
      }
      print(dq::test::table_line(row), table);
    }
    ++round;
  } while (Clock::now() < end);
}

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--soak") == 0 && i + 1 < argc) {
      soak_minutes = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  doctest::Context context(static_cast<int>(rest.size()), rest.data());
  return context.run();
}
