// Reads conf/dq.ini with inih. Every key is a row of the table in
// config_keys.cc, which gives its default, type and range. Unknown sections
// or keys are errors, so a typo never silently falls back to a default.
#include "common/core/config.h"

#include <ini.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/core/config_keys.h"

namespace dq {
namespace {

// "section.key" -> its value and the line it was on (the last occurrence
// wins, as inih hands them over in file order).
struct IniValue {
  std::string text;
  int line = 0;
};
using Values = std::map<std::string, IniValue>;

// inih reads through this, a line at a time, so each value knows its line.
struct IniReading {
  const std::string* text = nullptr;
  size_t at = 0;
  int line = 0;
  bool line_ended = true;  // the last piece handed out ended its line
  Values values;
};

char* read_piece(char* out, int room, void* stream) {
  auto* reading = static_cast<IniReading*>(stream);
  const std::string& text = *reading->text;
  if (reading->at >= text.size() || room < 2) {
    return nullptr;
  }
  size_t end = text.find('\n', reading->at);
  end = end == std::string::npos ? text.size() : end + 1;
  size_t length = std::min(end - reading->at, static_cast<size_t>(room - 1));
  text.copy(out, length, reading->at);
  out[length] = '\0';
  if (reading->line_ended) {
    ++reading->line;
  }
  reading->at += length;
  reading->line_ended = out[length - 1] == '\n';
  return out;
}

int collect(void* user, const char* section, const char* name, const char* value) {
  auto* reading = static_cast<IniReading*>(user);
  reading->values[std::string(section) + "." + name] = {value, reading->line};
  return 1;
}

// "PATH:LINE: " before a message about that line.
std::string at_line(const std::string& path, int line) {
  return path + ":" + std::to_string(line) + ": ";
}

// Line `number` (from 1) of text, without its line break.
std::string line_of(const std::string& text, int number) {
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (n == number) {
      return line;
    }
  }
  return "";
}

Result<Values> read_ini(const std::string& path, const std::string& text) {
  IniReading reading;
  reading.text = &text;
  int rc = ini_parse_stream(&read_piece, &reading, &collect, &reading);
  if (rc > 0) {
    return Status(Code::kInvalid, at_line(path, rc) + "syntax error: '" + line_of(text, rc) +
                                      "' is neither [section], key = value nor a ; comment");
  }
  for (const auto& entry : reading.values) {
    if (find_config_key(entry.first) == nullptr) {
      return Status(Code::kInvalid, at_line(path, entry.second.line) + "unknown key " +
                                        entry.first + suggest_config_key(entry.first));
    }
  }
  return reading.values;
}

std::string resolve(const std::filesystem::path& base, const std::string& path) {
  if (path.empty()) {
    return path;
  }
  std::filesystem::path p(path);
  if (p.is_absolute()) {
    return p.lexically_normal().string();
  }
  return (base / p).lexically_normal().string();
}

// Each key's value from the file, or its default. An empty path means its
// default too. A bad value is named with its file and line.
Status apply_values(const std::string& path, const Values& values, Config* config) {
  for (const ConfigKey& key : config_keys()) {
    auto it = values.find(key.key());
    std::string text = it == values.end() ? key.default_value : it->second.text;
    if (key.type == ConfigType::kPath && text.empty()) {
      text = key.default_value;
    }
    Status status = apply_config_value(key, text, config);
    if (!status.is_ok()) {
      std::string where = it == values.end() ? "" : at_line(path, it->second.line);
      return Status(status.code(), where + status.message());
    }
  }
  return Status::ok();
}

// Rules between keys.
Status check_together(const Config& config) {
  // One add carries a body and its id and fields: the request limit must let it in.
  if (config.max_request_bytes < config.max_body_bytes + 4096) {
    return Status(Code::kInvalid, "server.max_request_bytes (" +
                                      std::to_string(config.max_request_bytes) +
                                      ") must be at least server.max_body_bytes + 4096 (" +
                                      std::to_string(config.max_body_bytes + 4096) + ")");
  }
  if (config.admin_user.empty() != config.admin_password_file.empty()) {
    return Status(Code::kInvalid, "admin.user and admin.password_file go together");
  }
  return Status::ok();
}

// Paths are relative to the config file's folder; the pid file defaults to
// the log dir.
void resolve_paths(const std::filesystem::path& base, Config* config) {
  config->sqlite_path = resolve(base, config->sqlite_path);
  config->log_dir = resolve(base, config->log_dir);
  config->admin_password_file = resolve(base, config->admin_password_file);
  config->pid_file =
      config->pid_file.empty() ? config->log_dir + "/dqd.pid" : resolve(base, config->pid_file);
}

}  // namespace

bool parse_host_port(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size()) {
    return false;
  }
  std::string port_text = text.substr(colon + 1);
  if (port_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5) {
    return false;
  }
  int value = std::stoi(port_text);
  if (value < 1 || value > 65535) {
    return false;
  }
  *host = text.substr(0, colon);
  *port = value;
  return true;
}

Result<Config> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::kInvalid, "cannot open config file " + path);
  }
  std::ostringstream whole;
  whole << in.rdbuf();
  return load_config_text(path, whole.str());
}

Result<Config> load_config_text(const std::string& path, const std::string& text) {
  auto values = read_ini(path, text);
  if (!values.is_ok()) {
    return values.status();
  }
  Config config;
  Status status = apply_values(path, *values, &config);
  if (status.is_ok()) {
    status = check_together(config);
    if (!status.is_ok()) {
      status = Status(status.code(), path + ": " + status.message());
    }
  }
  if (!status.is_ok()) {
    return status;
  }
  std::filesystem::path absolute = std::filesystem::absolute(path);
  config.path = absolute.lexically_normal().string();
  resolve_paths(absolute.parent_path(), &config);
  return config;
}

}  // namespace dq
