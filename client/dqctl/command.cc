// Implements client/dqctl/command.h: the self-registering command table and
// the shared error reporting of dqctl commands.
#include "client/dqctl/command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/core/text_list.h"
#include "common/core/time_text.h"
#include "common/registry/shard_list.h"

namespace dq::ctl {
namespace {

// A function-local static, so registrations from other files' static
// initializers never run before the map exists.
std::map<std::string, CommandInfo>& command_table() {
  static std::map<std::string, CommandInfo> table;
  return table;
}

}  // namespace

CommandRegistration::CommandRegistration(const char* name, const char* usage, CommandFn fn) {
  command_table()[name] = CommandInfo{usage, fn};
}

const std::map<std::string, CommandInfo>& registered_commands() { return command_table(); }

int exit_code_for(const Status& status) {
  if (status.is_ok()) {
    return kExitOk;
  }
  if (status.code() == Code::kUnavailable || status.code() == Code::kTimeout) {
    return kExitUnavailable;
  }
  return kExitFailed;
}

int report_failure(const Status& status) {
  fprintf(stderr, "dqctl: %s\n", status.message().c_str());
  return exit_code_for(status);
}

int usage_error(const std::string& command, const std::string& message) {
  fprintf(stderr, "dqctl %s: %s\n", command.c_str(), message.c_str());
  auto it = command_table().find(command);
  if (it != command_table().end()) {
    fprintf(stderr, "usage:\n%s\n", it->second.usage.c_str());
  }
  return kExitUsage;
}

bool load_ctl_config(const CtlOptions& options, Config* config, int* exit_code) {
  auto loaded = load_config(options.config_path);
  if (!loaded.is_ok()) {
    fprintf(stderr, "dqctl: config: %s\n", loaded.status().message().c_str());
    *exit_code = kExitUsage;
    return false;
  }
  *config = std::move(*loaded);
  // The registry's shards too, as dqd's master gives its children
  // (common/registry/shard_list.h); a registry that cannot be read adds none.
  (void)merge_registry_shards(config);
  return true;
}

int require_known_topic(const CtlOptions& options, const std::string& topic) {
  int exit_code = kExitOk;
  auto registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }
  auto found = registered_topic(*registry, topic);
  return found.is_ok() ? kExitOk : report_failure(found.status());
}

Result<Topic> registered_topic(Registry& registry, const std::string& name) {
  auto topic = registry.get_topic(name);
  if (!topic.is_ok() && topic.status().code() == Code::kNotFound) {
    return Status(Code::kNotFound, "unknown topic '" + name + "'");
  }
  return topic;
}

void print_rows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) {
      widths.resize(row.size(), 0);
    }
    for (size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string text;
    for (size_t c = 0; c < row.size(); ++c) {
      text += row[c];
      if (c + 1 < row.size()) {
        text += std::string(widths[c] - row[c].size() + 2, ' ');
      }
    }
    printf("%s\n", text.c_str());
  }
}

void print_json(const Json& json) { printf("%s\n", json.dump(2).c_str()); }

std::string format_time(int64_t ms) { return ms <= 0 ? "-" : format_local_datetime(ms); }

bool take_option(const std::vector<std::string>& args, size_t* i, std::string* name,
                 std::string* value) {
  const std::string& arg = args[*i];
  size_t eq = arg.find('=');
  if (eq != std::string::npos) {
    *name = arg.substr(0, eq);
    *value = arg.substr(eq + 1);
    return true;
  }
  *name = arg;
  if (*i + 1 >= args.size()) {
    return false;
  }
  *value = args[++*i];
  return true;
}

bool parse_int_arg(const std::string& text, int64_t min, int64_t max, int64_t* out) {
  if (text.empty() || (text[0] != '-' && (text[0] < '0' || text[0] > '9'))) {
    return false;
  }
  errno = 0;
  char* end = nullptr;
  long long value = strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) {
    return false;
  }
  if (value < min || value > max) {
    return false;
  }
  *out = value;
  return true;
}

void warn_shards_not_reached(const std::vector<std::string>& shards, const char* consequence) {
  if (!shards.empty()) {
    fprintf(stderr, "dqctl: warning: Redis shard(s) not reached, %s: %s\n", consequence,
            join_list(shards, ", ").c_str());
  }
}

std::string parse_named_row_args(const std::vector<std::string>& args, size_t from,
                                 const std::string& option, NamedRowArgs* out) {
  const std::string with_value = option + "=";
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == option && i + 1 < args.size()) {
      out->option = args[++i];
    } else if (arg.rfind(with_value, 0) == 0) {
      out->option = arg.substr(with_value.size());
    } else if (!arg.empty() && arg[0] == '-') {
      return "unknown option " + arg;
    } else if (out->name.empty()) {
      out->name = arg;
    } else {
      return "too many arguments";
    }
  }
  return "";
}

bool load_config_without_args(const char* command, const CtlOptions& options,
                              const std::vector<std::string>& args, Config* config,
                              int* exit_code) {
  if (!args.empty()) {
    *exit_code = usage_error(command, "takes no arguments");
    return false;
  }
  return load_ctl_config(options, config, exit_code);
}

}  // namespace dq::ctl
