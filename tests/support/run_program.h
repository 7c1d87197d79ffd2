// Runs a built program (dqctl, mostly) as a child process with a given
// standard input, capturing its standard output and error separately.
#pragma once

#include <string>
#include <vector>

namespace dq::test {

struct RunResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string out;
  std::string err;
};

// Runs argv (argv[0] is a path). stdin_text is fed on its standard input;
// stdout and stderr pass through files in scratch_dir (which must exist);
// cwd, when not empty, is its working directory.
RunResult run_program(const std::vector<std::string>& argv, const std::string& scratch_dir,
                      const std::string& stdin_text = "", const std::string& cwd = "");

// run_program for build/dqctl with the given arguments.
RunResult run_dqctl(const std::vector<std::string>& args, const std::string& scratch_dir,
                    const std::string& stdin_text = "", const std::string& cwd = "");

std::string read_text_file(const std::string& path);  // "" when unreadable
// Every file of a folder (a dqd's log folder) as one text.
std::string text_of_dir(const std::string& dir);
bool contains(const std::string& text, const std::string& part);
size_t occurrences(const std::string& text, const std::string& part);  // overlapping ones too

}  // namespace dq::test
