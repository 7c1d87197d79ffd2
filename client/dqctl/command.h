// dqctl's command table. Each client/dqctl/cmd_*.cc registers its command with
//   static const CommandRegistration kRegistered("topic", "usage text", &run_topic);
// so a new command is a new file; main.cc never changes. Also the exit codes
// every command uses, and small helpers for reporting errors the same way.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/dqctl/registry_beside_dqd.h"
#include "common/core/config.h"
#include "common/core/json.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq::ctl {

// Exit codes scripts can rely on (documented in `dqctl --help` and docs/registry.md).
inline constexpr int kExitOk = 0;      // done
inline constexpr int kExitFailed = 1;  // the operation failed: not found, conflict, invalid value
inline constexpr int kExitUsage = 2;   // bad command line or unreadable config file
inline constexpr int kExitUnavailable = 3;  // cannot reach the service, Redis or the database

// Global options, parsed by main.cc before or after the command name.
struct CtlOptions {
  std::string config_path;           // -c/--config; default conf/dq.ini, else /etc/dq/dq.ini
  std::vector<std::string> servers;  // -s/--server host:port (default 127.0.0.1:6780)
  bool json = false;                 // --json: machine-readable output on stdout
  std::string token;                 // --token, else env DQ_TOKEN: the API token sent to -s
  // --url http://HOST:PORT: a dq host's HTTP API, for the job commands (as
  // -s) and the topic commands (over HTTP instead of this host's registry).
  std::string url;
};

// args: everything after the command name.
using CommandFn = int (*)(const CtlOptions& options, const std::vector<std::string>& args);

struct CommandInfo {
  std::string usage;  // one or more lines, each starting with the command name
  CommandFn fn;
};

struct CommandRegistration {
  CommandRegistration(const char* name, const char* usage, CommandFn fn);
};

// All registered commands, by name.
const std::map<std::string, CommandInfo>& registered_commands();

// The exit code for a failed Status: kUnavailable/kTimeout -> 3, else 1.
int exit_code_for(const Status& status);

// Prints "dqctl: <message>" to stderr and returns exit_code_for(status).
int report_failure(const Status& status);

// Prints "dqctl: warning: Redis shard(s) not reached, <consequence>: <shards>"
// to stderr, or nothing when every shard answered.
void warn_shards_not_reached(const std::vector<std::string>& shards, const char* consequence);

// Prints "dqctl <command>: <message>" and the command's usage to stderr;
// returns kExitUsage.
int usage_error(const std::string& command, const std::string& message);

// Loads options.config_path; on failure prints why and sets *exit_code.
bool load_ctl_config(const CtlOptions& options, Config* config, int* exit_code);
// load_ctl_config for a command that takes no arguments: any given is a
// usage error (printed, *exit_code set).
bool load_config_without_args(const char* command, const CtlOptions& options,
                              const std::vector<std::string>& args, Config* config, int* exit_code);

// Loads the config and opens a store kept in its [sqlite] database (Registry,
// AdminUsers, ApiTokens: each has a static open(path)); on failure prints why
// and sets *exit_code (2 for a bad config, 3 for the database).
template <class Store>
std::unique_ptr<Store> open_ctl_store(const CtlOptions& options, int* exit_code) {
  Config config;
  if (!load_ctl_config(options, &config, exit_code)) {
    return nullptr;
  }
  // Not a new, empty file beside a dqd that lost its own.
  Status beside = check_registry_beside_dqd(config);
  if (!beside.is_ok()) {
    fprintf(stderr, "dqctl: %s\n", beside.message().c_str());
    *exit_code = kExitUnavailable;
    return nullptr;
  }
  auto opened = Store::open(config.sqlite_path);
  if (!opened.is_ok()) {
    fprintf(stderr, "dqctl: registry %s: %s\n", config.sqlite_path.c_str(),
            opened.status().message().c_str());
    // Any failure to open or migrate means the database cannot be used.
    *exit_code = kExitUnavailable;
    return nullptr;
  }
  return std::move(*opened);
}

// The end of a command on named rows of one store (AdminUsers, ApiTokens):
// opens the store, then runs add(store) or list(store), or removes the row
// `name` and prints "<noun> NAME deleted".
// The words after a named-rows subcommand ("add NAME --topics a,b"): at most
// one NAME and one `--option VALUE` (or `--option=VALUE`).
struct NamedRowArgs {
  std::string name;
  std::optional<std::string> option;
};
// Empty when args[from..] parse; else what is wrong, for usage_error.
std::string parse_named_row_args(const std::vector<std::string>& args, size_t from,
                                 const std::string& option, NamedRowArgs* out);

template <class Store, class Add, class List>
int run_on_named_rows(const CtlOptions& options, const std::string& sub, const std::string& name,
                      const char* noun, Add add, List list) {
  int exit_code = kExitOk;
  auto store = open_ctl_store<Store>(options, &exit_code);
  if (!store) {
    return exit_code;
  }
  if (sub == "add") {
    return add(*store);
  }
  if (sub == "list") {
    return list(*store);
  }
  Status removed = store->remove(name);
  if (!removed.is_ok()) {
    return report_failure(removed);
  }
  printf("%s %s deleted\n", noun, name.c_str());
  return kExitOk;
}

inline std::unique_ptr<Registry> open_ctl_registry(const CtlOptions& options, int* exit_code) {
  return open_ctl_store<Registry>(options, exit_code);
}

// Whether `topic` is registered: kExitOk, or prints "unknown topic" and
// returns kExitFailed (kExitUnavailable / kExitUsage when the registry or
// config cannot be read). For commands that name a topic without going
// through the API (which answers 404 itself).
int require_known_topic(const CtlOptions& options, const std::string& topic);

// The registered topic `name`; kNotFound says "unknown topic 'name'".
Result<Topic> registered_topic(Registry& registry, const std::string& name);

// Prints rows as a table: columns padded to their widest cell, two spaces apart.
void print_rows(const std::vector<std::vector<std::string>>& rows);

// Prints JSON as --json gives it: indented by 2, then a newline.
void print_json(const Json& json);

// Prints what a store's list() answered: with --json an array of
// to_json(row), else print_text(rows); a failed list reports its Status.
template <class Row, class ToJson, class PrintText>
int print_listing(const CtlOptions& options, const Result<std::vector<Row>>& listed, ToJson to_json,
                  PrintText print_text) {
  if (!listed.is_ok()) {
    return report_failure(listed.status());
  }
  if (options.json) {
    Json out = Json::array();
    for (const Row& row : *listed) {
      out.push_back(to_json(row));
    }
    print_json(out);
  } else {
    print_text(*listed);
  }
  return kExitOk;
}

// "YYYY-MM-DD HH:MM:SS" in local time; "-" for 0 or less.
std::string format_time(int64_t ms);

// The option at args[*i] ("--name=value", or "--name" and the next arg as
// its value): sets *name and *value and moves *i to the last arg it used.
// False when "--name" is the last arg (no value).
bool take_option(const std::vector<std::string>& args, size_t* i, std::string* name,
                 std::string* value);

// Parses a whole decimal integer in [min, max]; false on anything else.
bool parse_int_arg(const std::string& text, int64_t min, int64_t max, int64_t* out);

}  // namespace dq::ctl
