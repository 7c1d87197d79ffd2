// Reads conf/dq.ini with inih. Every key is a row of the table in
// config_keys.cc, which gives its default, type and range. Unknown sections
// or keys are errors, so a typo never silently falls back to a default.
#include "common/core/config.h"

#include <ini.h>

#include <filesystem>
#include <map>

#include "common/core/config_keys.h"

namespace dq {
namespace {

using Values = std::map<std::string, std::string>;  // "section.key" -> value

int collect(void* user, const char* section, const char* name, const char* value) {
  auto* values = static_cast<Values*>(user);
  (*values)[std::string(section) + "." + name] = value;
  return 1;
}

Result<Values> read_ini(const std::string& path) {
  Values values;
  int rc = ini_parse(path.c_str(), collect, &values);
  if (rc < 0) {
    return Status(Code::kInvalid, "cannot open config file " + path);
  }
  if (rc > 0) {
    return Status(Code::kInvalid, path + ": syntax error on line " + std::to_string(rc));
  }
  for (const auto& entry : values) {
    if (find_config_key(entry.first) == nullptr) {
      return Status(Code::kInvalid, path + ": unknown key " + entry.first);
    }
  }
  return values;
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
// default too.
Status apply_values(const Values& values, Config* config) {
  for (const ConfigKey& key : config_keys()) {
    auto it = values.find(key.key());
    std::string text = it == values.end() ? key.default_value : it->second;
    if (key.type == ConfigType::kPath && text.empty()) {
      text = key.default_value;
    }
    Status status = apply_config_value(key, text, config);
    if (!status.is_ok()) {
      return status;
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
  auto values = read_ini(path);
  if (!values.is_ok()) {
    return values.status();
  }
  Config config;
  Status status = apply_values(*values, &config);
  if (status.is_ok()) {
    status = check_together(config);
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
