// Reading what dq wrote, in tests: a whole file, and one kind of dq's daily
// logs (err, request, notify) over every day in its folder.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dq::test {

// The file's bytes; "" when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every KIND_YYYYMMDD.log in dir, one after the other.
inline std::string read_logs(const std::string& dir, const std::string& kind) {
  std::string all;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().filename().string().rfind(kind + "_", 0) == 0) {
      all += read_text(entry.path().string());
    }
  }
  return all;
}

}  // namespace dq::test
