// An npm-based test tool of tests/ (its package.json and package-lock.json
// pin every package): copied into the build dir and installed there with
// `npm ci` once, so a test can run it with node.
#pragma once

#include <string>
#include <vector>

namespace dq::test {

// The tool's directory in the build tree, with `files` (package.json,
// package-lock.json and its scripts) copied from tests/SOURCE_SUBDIR and its
// packages installed; `marker` is a file under node_modules that says the
// install is done. A failed install fails the test that asked.
std::string npm_tool_dir(const std::string& source_subdir, const std::vector<std::string>& files,
                         const std::string& marker);

}  // namespace dq::test
