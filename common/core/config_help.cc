// How the config keys describe themselves: `dqd --help-config` and the
// comments of conf/dq.ini, both from the table in config_keys.cc.
#include <sstream>

#include "common/core/config_keys.h"

namespace dq {
namespace {

// `text` in lines of at most `width` columns (a longer word gets its own
// line), each starting with `prefix`.
std::string wrapped(const std::string& text, const std::string& prefix, size_t width) {
  std::istringstream words(text);
  std::string word;
  std::string out;
  std::string line = prefix;
  while (words >> word) {
    if (line.size() > prefix.size() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = prefix;
    }
    line += (line.size() > prefix.size() ? " " : "") + word;
  }
  return out + line + "\n";
}

}  // namespace

std::string ConfigKey::type_text() const {
  switch (type) {
    case ConfigType::kInteger:
      return "integer from " + std::to_string(min) + " to " + std::to_string(max);
    case ConfigType::kBool:
      return "yes or no";
    case ConfigType::kText:
      return "text";
    case ConfigType::kChoice:
      return std::string("one of ") + choices;
    case ConfigType::kListen:
      return "host:port";
    case ConfigType::kListenOrOff:
      return "host:port, empty turns it off";
    case ConfigType::kPath:
      return "path, relative to the config file's folder";
    case ConfigType::kShards:
      return "comma list of host:port, host:port:password or "
             "sentinel://master[:password]@host:port[,host:port...]";
    case ConfigType::kHosts:
      return "comma list of host names";
  }
  return "";
}

std::string ConfigKey::default_text() const {
  if (default_shown != nullptr) {
    return default_shown;
  }
  return *default_value == '\0' ? "empty" : default_value;
}

std::string config_help() {
  std::string out = "dqd config keys (conf/dq.ini documents each; unknown keys are refused):\n";
  std::string section;
  for (const ConfigKey& key : config_keys()) {
    if (section != key.section) {
      section = key.section;
      out += "\n[" + section + "]\n";
    }
    out += "  " + std::string(key.name) + "  (" + key.type_text() + "; default " +
           key.default_text() + ")\n";
    out += wrapped(key.help, "      ", 78);
  }
  return out;
}

std::string config_ini_comment(const ConfigKey& key) {
  return wrapped(key.help, "; ", 78) +
         wrapped("(" + key.type_text() + "; default " + key.default_text() + ")", "; ", 78);
}

}  // namespace dq
