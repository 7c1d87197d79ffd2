#include "tests/support/npm_tool.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "tests/support/run_program.h"

namespace dq::test {

std::string npm_tool_dir(const std::string& source_subdir, const std::vector<std::string>& files,
                         const std::string& marker) {
  std::string target = std::string(DQ_BUILD_DIR) + "/" + source_subdir;
  std::string source = std::string(DQ_SOURCE_DIR) + "/tests/" + source_subdir;
  std::filesystem::create_directories(target);
  for (const auto& file : files) {
    std::filesystem::copy_file(source + "/" + file, target + "/" + file,
                               std::filesystem::copy_options::overwrite_existing);
  }
  if (!std::filesystem::exists(target + "/node_modules/" + marker)) {
    RunResult installed =
        run_program({"/usr/bin/env", "npm", "ci", "--no-audit", "--no-fund"}, target, "", target);
    REQUIRE_MESSAGE(installed.exit_code == 0, "npm ci failed in ", target, ": ", installed.out,
                    installed.err);
  }
  return target;
}

}  // namespace dq::test
