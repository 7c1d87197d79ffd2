// The config keys in one table: name, section, type, default, range and help.
// It drives load_config (defaults, parsing, validation), `dqd --help-config`
// and the comments of conf/dq.ini (tests/test_config_keys.cc checks that the
// file documents exactly these keys, each with this help and default).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "common/core/config.h"

namespace dq {

enum class ConfigType {
  kInteger,      // a whole number from min to max
  kBool,         // yes or no (also true/false, on/off, 1/0)
  kText,         // any text
  kChoice,       // one of `choices` ("a|b|c")
  kListen,       // host:port
  kListenOrOff,  // host:port, or empty: off
  kPath,         // relative to the config file's folder; empty: the default
  kShards,       // host:port[:password],...
  kHosts,        // a comma list of host names
};

// The Config member a key fills.
using ConfigField = std::variant<int Config::*, int64_t Config::*, size_t Config::*, bool Config::*,
                                 std::string Config::*, std::vector<ShardAddress> Config::*,
                                 std::vector<std::string> Config::*>;

struct ConfigKey {
  const char* section;
  const char* name;
  ConfigType type;
  ConfigField field;
  const char* default_value;  // as written in the file; applied when the key is absent
  int64_t min;                // kInteger only
  int64_t max;
  const char* choices;  // kChoice only
  const char* help;
  const char* default_shown;  // when not default_value itself (nullptr: it is)

  std::string key() const { return std::string(section) + "." + name; }
  // "integer from 1 to 64", "yes or no", "host:port", ...
  std::string type_text() const;
  // The default as a reader sees it: "1", "127.0.0.1:6780", "empty", ...
  std::string default_text() const;
};

// Every key, in conf/dq.ini's order.
const std::vector<ConfigKey>& config_keys();

// The key "section.name", or nullptr when there is none.
const ConfigKey* find_config_key(const std::string& key);

// For an unknown "section.name": ": did you mean [consumer] concurrency?"
// (the same name in another section, or a close spelling), else a short
// note of what exists; appended to the "unknown key" message.
std::string suggest_config_key(const std::string& key);

// Parses `text` as `key`'s value into its Config member; the Status names
// the key and says what it must be.
Status apply_config_value(const ConfigKey& key, const std::string& text, Config* config);

// `dqd --help-config`: every key with its type, default, range and help.
std::string config_help();

// The comment conf/dq.ini carries right above `key`'s line: its help
// wrapped to 78 columns, then "(type; default X)", each line "; "-prefixed.
std::string config_ini_comment(const ConfigKey& key);

}  // namespace dq
