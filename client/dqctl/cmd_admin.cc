// `dqctl admin user ...`: the users of the admin page (common/registry/admin_users.h).
//   admin user add NAME [--password-file FILE]   password from the file's first
//                                                line, else the first line of stdin
//   admin user list
//   admin user del NAME                          also ends the user's sessions
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/core/json.h"
#include "common/registry/admin_users.h"

namespace dq::ctl {
namespace {

constexpr const char* kCommand = "admin";
constexpr const char* kUsage =
    "admin user add NAME [--password-file FILE]   (else the password is read from stdin)\n"
    "admin user list\n"
    "admin user del NAME";

int add_user(AdminUsers& users, const std::string& name, const std::string& password_file) {
  std::string password;
  if (!password_file.empty()) {
    auto read = read_password_file(password_file);
    if (!read.is_ok()) {
      return report_failure(read.status());
    }
    password = *read;
  } else {
    std::getline(std::cin, password);
    if (!password.empty() && password.back() == '\r') {
      password.pop_back();
    }
  }
  Status added = users.add(name, password);
  if (!added.is_ok()) {
    return report_failure(added);
  }
  printf("admin user %s added\n", name.c_str());
  return kExitOk;
}

int list_users(const CtlOptions& options, AdminUsers& users) {
  auto listed = users.list();
  if (!listed.is_ok()) {
    return report_failure(listed.status());
  }
  if (options.json) {
    Json out = Json::array();
    for (const auto& user : *listed) {
      out.push_back({{"name", user.name}, {"created_at_ms", user.created_at_ms}});
    }
    printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  for (const auto& user : *listed) {
    printf("%s\n", user.name.c_str());
  }
  return kExitOk;
}

int run_admin_command(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.size() < 2 || args[0] != "user") {
    return usage_error(kCommand, "needs user add|list|del");
  }
  const std::string& sub = args[1];
  std::string name;
  std::string password_file;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--password-file" && i + 1 < args.size()) {
      password_file = args[++i];
    } else if (arg.rfind("--password-file=", 0) == 0) {
      password_file = arg.substr(16);
    } else if (!arg.empty() && arg[0] == '-') {
      return usage_error(kCommand, "unknown option " + arg);
    } else if (name.empty()) {
      name = arg;
    } else {
      return usage_error(kCommand, "too many arguments");
    }
  }
  if (sub == "list") {
    if (!name.empty()) {
      return usage_error(kCommand, "admin user list takes no arguments");
    }
  } else if (sub == "add" || sub == "del") {
    if (name.empty()) {
      return usage_error(kCommand, "admin user " + sub + " needs NAME");
    }
    if (sub == "del" && !password_file.empty()) {
      return usage_error(kCommand, "--password-file is for add");
    }
  } else {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }
  int exit_code = kExitOk;
  auto users = open_ctl_store<AdminUsers>(options, &exit_code);
  if (!users) {
    return exit_code;
  }
  if (sub == "add") {
    return add_user(*users, name, password_file);
  }
  if (sub == "list") {
    return list_users(options, *users);
  }
  Status removed = users->remove(name);
  if (!removed.is_ok()) {
    return report_failure(removed);
  }
  printf("admin user %s deleted\n", name.c_str());
  return kExitOk;
}

const CommandRegistration kRegistered(kCommand, kUsage, &run_admin_command);

}  // namespace
}  // namespace dq::ctl
