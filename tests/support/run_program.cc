// Implements tests/support/run_program.h with fork/execv and files for the
// child's standard streams (no pipes, so a chatty child cannot block).
#include "tests/support/run_program.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dq::test {

RunResult run_program(const std::vector<std::string>& argv, const std::string& scratch_dir,
                      const std::string& stdin_text, const std::string& cwd) {
  REQUIRE(!argv.empty());
  std::string in_path = scratch_dir + "/run-stdin.txt";
  std::string out_path = scratch_dir + "/run-stdout.txt";
  std::string err_path = scratch_dir + "/run-stderr.txt";
  std::ofstream(in_path) << stdin_text;
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int in = open(in_path.c_str(), O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) {
      _exit(126);
    }
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      _exit(126);
    }
    std::vector<char*> raw;
    raw.reserve(argv.size() + 1);
    for (const auto& arg : argv) {
      raw.push_back(const_cast<char*>(arg.c_str()));
    }
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  RunResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text_file(out_path);
  result.err = read_text_file(err_path);
  return result;
}

RunResult run_dqctl(const std::vector<std::string>& args, const std::string& scratch_dir,
                    const std::string& stdin_text, const std::string& cwd) {
  std::vector<std::string> argv = {DQ_BUILD_DIR "/dqctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, scratch_dir, stdin_text, cwd);
}

std::string read_text_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace dq::test

namespace dq::test {

std::string text_of_dir(const std::string& dir) {
  std::string all;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    all += read_text_file(entry.path().string());
  }
  return all;
}

}  // namespace dq::test
