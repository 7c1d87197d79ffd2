// dqctl: the command line for operators. Parses the global options (before
// or after the command name), then hands the rest to the registered command
// (see client/dqctl/command.h; commands live in cmd_*.cc).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/core/log.h"

#ifndef DQ_VERSION
#define DQ_VERSION "unknown"
#endif

namespace dq::ctl {
namespace {

constexpr const char* kDefaultServer = "127.0.0.1:6780";

void print_help(FILE* out) {
  fprintf(out,
          "usage: dqctl [global options] COMMAND [args]\n"
          "\n"
          "global options (before or after COMMAND):\n"
          "  -c, --config CONF        config file (default: conf/dq.ini if present, else "
          "/etc/dq/dq.ini)\n"
          "  -s, --server HOST:PORT[,HOST:PORT]\n"
          "                           dq API servers, repeatable (default: %s)\n"
          "      --json               machine-readable JSON on stdout\n"
          "      --url http://HOST:PORT\n"
          "                           a dq host's HTTP API: for add/get/del (as -s) and for\n"
          "                           the topic and schedule commands, which then need no\n"
          "                           config or database\n"
          "      --token TOKEN        API token for the servers (default: env DQ_TOKEN);\n"
          "                           needed when they have [server] require_token = yes\n"
          "                           (topic and schedule writes: a token with the admin scope)\n"
          "  -h, --help               this help\n"
          "      --version            print the version\n"
          "\n"
          "commands:\n",
          kDefaultServer);
  for (const auto& [name, info] : registered_commands()) {
    // Indent every usage line.
    std::string usage = "  " + info.usage;
    for (size_t pos = usage.find('\n'); pos != std::string::npos; pos = usage.find('\n', pos + 3)) {
      usage.insert(pos + 1, "  ");
    }
    fprintf(out, "%s\n", usage.c_str());
  }
  fprintf(out,
          "\n"
          "exit codes:\n"
          "  %d  ok\n"
          "  %d  the operation failed (not found, already exists, invalid value); why on stderr\n"
          "  %d  usage error (bad command line, unreadable config)\n"
          "  %d  cannot reach the service, Redis or the database\n",
          kExitOk, kExitFailed, kExitUsage, kExitUnavailable);
}

std::string default_config_path() {
  if (access("conf/dq.ini", F_OK) == 0) {
    return "conf/dq.ini";
  }
  return "/etc/dq/dq.ini";
}

// Splits "a:1,b:2" and checks each is host:port; false on a bad entry.
bool add_servers(const std::string& text, std::vector<std::string>* servers) {
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string entry =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string host;
    int port = 0;
    if (!parse_host_port(entry, &host, &port)) {
      fprintf(stderr, "dqctl: --server '%s' is not HOST:PORT\n", entry.c_str());
      return false;
    }
    servers->push_back(entry);
    if (comma == std::string::npos) {
      return true;
    }
    start = comma + 1;
  }
}

// --url: "http(s)://host:port" (a trailing "/" is dropped); false on anything else.
bool set_url(const std::string& url, CtlOptions* options) {
  std::string text = url;
  if (!text.empty() && text.back() == '/') {
    text.pop_back();
  }
  size_t scheme = text.rfind("http://", 0) == 0 ? 7 : text.rfind("https://", 0) == 0 ? 8 : 0;
  std::string host;
  int port = 0;
  if (scheme == 0 || !parse_host_port(text.substr(scheme), &host, &port)) {
    fprintf(stderr, "dqctl: --url '%s' is not http://HOST:PORT\n", url.c_str());
    return false;
  }
  options->url = text;
  options->servers = {text};
  return true;
}

// True for a command's own option that takes the next argument as its value:
// "--name" without "=", other than the switches the commands have.
bool takes_value(const std::string& arg) {
  if (arg.size() <= 2 || arg.rfind("--", 0) != 0) {
    return false;
  }
  if (arg.find('=') != std::string::npos) {
    return false;
  }
  return arg != "--all" && arg != "--help" && arg != "--admin" && arg != "--purge";
}

// `dqctl COMMAND [SUB] --help`: the command's usage lines, only those of SUB
// when it names one of them.
int print_command_help(const std::string& command, const std::string& usage,
                       const std::vector<std::string>& args_before) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= usage.size()) {
    size_t end = usage.find('\n', start);
    if (end == std::string::npos) {
      end = usage.size();
    }
    lines.push_back(usage.substr(start, end - start));
    start = end + 1;
  }
  std::string prefix = args_before.empty() ? "" : command + " " + args_before.front() + " ";
  std::string exact = args_before.empty() ? "" : command + " " + args_before.front();
  // A line starting with a space continues the one before it.
  auto print_lines = [&](bool only_sub) {
    bool printing = false;
    bool printed = false;
    for (const auto& line : lines) {
      bool continuation = !line.empty() && line[0] == ' ';
      if (!continuation) {
        printing = !only_sub || line.rfind(prefix, 0) == 0 || line == exact;
      }
      if (!printing) {
        continue;
      }
      printf(continuation ? "%s\n" : "usage: dqctl %s\n", line.c_str());
      printed = true;
    }
    return printed;
  };
  if (prefix.empty() || !print_lines(true)) {
    print_lines(false);
  }
  printf(
      "global options: -c CONF, -s HOST:PORT, --url http://HOST:PORT, --json, --token TOKEN "
      "(see dqctl --help)\n");
  return kExitOk;
}

int run(int argc, char** argv) {
  // The store's connections log each shard coming up at info level; a
  // one-shot command prints only what is wrong (and its own output).
  err_log().set_level(spdlog::level::warn);
  CtlOptions options;
  int i = 1;
  // True when arg is this option; its value ("-c VALUE", "--config VALUE" or
  // "--config=VALUE") goes to *value. A missing value is a usage error.
  auto value_of = [&](const std::string& arg, const char* shortname, const char* longname,
                      std::string* value) -> bool {
    std::string long_eq = std::string(longname) + "=";
    if (arg.rfind(long_eq, 0) == 0) {
      *value = arg.substr(long_eq.size());
      return true;
    }
    if (arg != shortname && arg != longname) {
      return false;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "dqctl: %s needs a value\n", arg.c_str());
      exit(kExitUsage);
    }
    *value = argv[++i];
    return true;
  };

  for (; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (arg.empty() || arg[0] != '-') {
      break;  // the command
    }
    if (arg == "-h" || arg == "--help") {
      print_help(stdout);
      return kExitOk;
    } else if (arg == "--version") {
      printf("dqctl %s\n", DQ_VERSION);
      return kExitOk;
    } else if (arg == "--json") {
      options.json = true;
    } else if (value_of(arg, "-c", "--config", &value)) {
      options.config_path = value;
    } else if (value_of(arg, "-s", "--server", &value)) {
      if (!add_servers(value, &options.servers)) {
        return kExitUsage;
      }
    } else if (value_of(arg, "--token", "--token", &value)) {
      options.token = value;
    } else if (value_of(arg, "--url", "--url", &value)) {
      if (!set_url(value, &options)) {
        return kExitUsage;
      }
    } else {
      fprintf(stderr, "dqctl: unknown option %s (try dqctl --help)\n", arg.c_str());
      return kExitUsage;
    }
  }
  if (i >= argc) {
    print_help(stderr);
    return kExitUsage;
  }
  std::string command = argv[i++];
  if (command == "help") {
    print_help(stdout);
    return kExitOk;
  }
  auto it = registered_commands().find(command);
  if (it == registered_commands().end()) {
    fprintf(stderr, "dqctl: unknown command '%s' (try dqctl --help)\n", command.c_str());
    return kExitUsage;
  }
  // Global options may follow the command name too. Left to the command: all
  // after "--", and the value of its own "--name VALUE" options (so that
  // `topic add x --creator -s` keeps "-s" as the creator).
  std::vector<std::string> args;
  bool next_is_value = false;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (next_is_value) {
      next_is_value = false;
    } else if (arg == "--") {
      args.insert(args.end(), argv + i, argv + argc);
      break;
    } else if (arg == "--help" || arg == "-h") {
      return print_command_help(command, it->second.usage, args);
    } else if (arg == "--json") {
      options.json = true;
      continue;
    } else if (value_of(arg, "-c", "--config", &value)) {
      options.config_path = value;
      continue;
    } else if (value_of(arg, "-s", "--server", &value)) {
      if (!add_servers(value, &options.servers)) {
        return kExitUsage;
      }
      continue;
    } else if (value_of(arg, "--token", "--token", &value)) {
      options.token = value;
      continue;
    } else if (value_of(arg, "--url", "--url", &value)) {
      if (!set_url(value, &options)) {
        return kExitUsage;
      }
      continue;
    } else {
      next_is_value = takes_value(arg);
    }
    args.push_back(arg);
  }
  if (options.config_path.empty()) {
    options.config_path = default_config_path();
  }
  if (options.servers.empty()) {
    options.servers.push_back(kDefaultServer);
  }
  // From the environment rather than the command line, where ps would show it.
  const char* env_token = getenv("DQ_TOKEN");
  if (options.token.empty() && env_token != nullptr) {
    options.token = env_token;
  }
  return it->second.fn(options, args);
}

}  // namespace
}  // namespace dq::ctl

int main(int argc, char** argv) { return dq::ctl::run(argc, argv); }
