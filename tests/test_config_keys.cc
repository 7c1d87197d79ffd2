// The config key table (common/core/config_keys.cc) is the one place a key is
// described: these checks keep conf/dq.ini, `dqd --help-config` and Config's
// own initializers from drifting away from it.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/core/config.h"
#include "common/core/config_keys.h"
#include "tests/support/dqd_process.h"
#include "tests/support/redis_server.h"

using namespace dq;

namespace {

// One key line of conf/dq.ini ("name = value", or "; name = value" for an
// example left commented out) and the comment lines right above it.
struct IniEntry {
  std::string key;  // section.name
  bool commented = false;
  std::string comment;
};

std::vector<IniEntry> read_ini_entries(const std::string& path) {
  static const std::regex kSection(R"(^\[([a-z_]+)\]$)");
  static const std::regex kKeyLine(R"(^(; )?([a-z_]+) = .*$)");
  std::ifstream in(path);
  std::vector<IniEntry> entries;
  std::vector<std::string> comments;  // the comment block being read
  std::string section;
  std::string line;
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_match(line, match, kSection)) {
      section = match[1];
      comments.clear();
    } else if (std::regex_match(line, match, kKeyLine)) {
      IniEntry entry{section + "." + match[2].str(), match[1].matched, ""};
      for (const auto& comment : comments) {
        entry.comment += comment + "\n";
      }
      entries.push_back(entry);
      comments.clear();
    } else if (line.rfind(";", 0) == 0) {
      comments.push_back(line);
    } else {
      comments.clear();  // a blank line ends a block: section notes stay free text
    }
  }
  return entries;
}

// The comment's last lines, as many as `expected` has.
std::string tail_lines(const std::string& comment, const std::string& expected) {
  size_t lines = static_cast<size_t>(std::count(expected.begin(), expected.end(), '\n'));
  size_t start = comment.size();
  for (size_t n = 0; n <= lines && start > 0; ++n) {
    start = comment.rfind('\n', start - 1);
    if (start == std::string::npos) {
      return comment;
    }
  }
  return start == comment.size() ? comment : comment.substr(start + 1);
}

// A Config member's value as text, to compare two Configs key by key.
std::string field_text(const Config& config, const ConfigKey& key) {
  return std::visit(
      [&](auto member) {
        using Field = std::decay_t<decltype(config.*member)>;
        std::ostringstream out;
        if constexpr (std::is_same_v<Field, std::vector<ShardAddress>>) {
          for (const auto& shard : config.*member) {
            out << shard.name() << ":" << shard.password << ",";
          }
        } else if constexpr (std::is_same_v<Field, std::vector<std::string>>) {
          for (const auto& host : config.*member) {
            out << host << ",";
          }
        } else {
          out << config.*member;
        }
        return out.str();
      },
      key.field);
}

}  // namespace

TEST_CASE("every key is in the table once, and its default is a valid value") {
  std::set<std::string> seen;
  for (const ConfigKey& key : config_keys()) {
    CAPTURE(key.key());
    CHECK(seen.insert(key.key()).second);
    CHECK(find_config_key(key.key()) == &key);
    CHECK(std::string(key.help).size() > 5);
    Config config;
    CHECK(apply_config_value(key, key.default_value, &config).is_ok());
  }
  CHECK(find_config_key("server.workerz") == nullptr);
}

TEST_CASE("Config's initializers are the table's defaults") {
  std::string dir = test::make_temp_dir("dq-config-keys");
  std::ofstream(dir + "/dq.ini") << "; nothing set\n";
  auto loaded = load_config(dir + "/dq.ini");
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().message());
  const Config built;
  for (const ConfigKey& key : config_keys()) {
    if (key.type == ConfigType::kPath || key.type == ConfigType::kShards) {
      // Paths are resolved against the file's folder, and a Config built in
      // code names its own shards: test_shard_config.cc checks both defaults.
      continue;
    }
    CAPTURE(key.key());
    CHECK(field_text(*loaded, key) == field_text(built, key));
  }
  test::remove_dir(dir);
}

TEST_CASE("conf/dq.ini documents exactly the table's keys, with their help and defaults") {
  const std::string path = std::string(DQ_SOURCE_DIR) + "/conf/dq.ini";
  std::vector<IniEntry> entries = read_ini_entries(path);
  const auto& keys = config_keys();
  size_t n = 0;
  for (const IniEntry& entry : entries) {
    CAPTURE(entry.key);
    REQUIRE_MESSAGE(n < keys.size(), "conf/dq.ini has a key line the table does not know");
    const ConfigKey& key = keys[n++];
    // In the table's order, so a missing or extra key shows where it is.
    const std::string where = "conf/dq.ini should have " + key.key() + " here";
    REQUIRE_MESSAGE(entry.key == key.key(), where);
    std::string expected = config_ini_comment(key);
    const std::string needed = "conf/dq.ini needs right above " + key.key() + ":\n" + expected;
    CHECK_MESSAGE(tail_lines(entry.comment, expected) == expected, needed);
  }
  const std::string lacks = "conf/dq.ini lacks " + (n < keys.size() ? keys[n].key() : "");
  CHECK_MESSAGE(n == keys.size(), lacks);
  // And what it sets is valid.
  auto config = load_config(path);
  CHECK_MESSAGE(config.is_ok(), config.status().message());
}

TEST_CASE("dqd --help-config lists every key with its type and default") {
  std::string output;
  REQUIRE(test::run_command({std::string(DQ_BUILD_DIR) + "/dqd", "--help-config"}, &output) == 0);
  std::string section;
  size_t at = 0;
  for (const ConfigKey& key : config_keys()) {
    CAPTURE(key.key());
    if (section != key.section) {
      section = key.section;
      at = output.find("[" + section + "]\n", at);
      REQUIRE(at != std::string::npos);
    }
    std::string line = "  " + std::string(key.name) + "  (" + key.type_text() + "; default " +
                       key.default_text() + ")\n";
    at = output.find(line, at);  // in the table's order, under its section
    REQUIRE(at != std::string::npos);
    // Then its help, indented.
    std::string help = key.help;
    std::string first_words = "      " + help.substr(0, help.find(' ', 10));
    CHECK(output.compare(at + line.size(), first_words.size(), first_words) == 0);
  }
}
