#include "common/core/json_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dq {

Status write_json_file(const std::string& path, const Json& value) {
  std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << value.dump(2) << "\n";
    if (!out) {
      return Status(Code::kUnavailable, "cannot write " + temp);
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    unlink(temp.c_str());
    return Status(Code::kUnavailable, "cannot rename " + temp + " to " + path + ": " + reason);
  }
  return Status::ok();
}

Result<Json> read_json_object_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) {
    return Status(Code::kNotFound, "no " + what + " " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  Json parsed = Json::parse(text.str(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status(Code::kInternal, what + " " + path + " is not a JSON object");
  }
  return parsed;
}

}  // namespace dq
