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
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace admin_command {

constexpr const char* kCommand = "admin";

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
  return print_listing(
      options, users.list(),
      [](const AdminUser& user) {
        return Json{{"name", user.name}, {"created_at_ms", user.created_at_ms}};
      },
      [](const std::vector<AdminUser>& listed) {
        for (const auto& user : listed) {
          printf("%s\n", user.name.c_str());
        }
      });
}

int run_admin_command(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.size() < 2 || args[0] != "user") {
    return usage_error(kCommand, "needs user add|list|del");
  }
  const std::string& sub = args[1];
  NamedRowArgs parsed;
  std::string wrong = parse_named_row_args(args, 2, "--password-file", &parsed);
  if (!wrong.empty()) {
    return usage_error(kCommand, wrong);
  }
  const std::string& name = parsed.name;
  const std::string password_file = parsed.option.value_or("");
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
  return run_on_named_rows<AdminUsers>(
      options, sub, name, "admin user",
      [&](AdminUsers& users) { return add_user(users, name, password_file); },
      [&](AdminUsers& users) { return list_users(options, users); });
}

constexpr const char* kUsage =
    "admin user add NAME [--password-file FILE]   (else the password is read from stdin)\n"
    "admin user list\n"
    "admin user del NAME";
const CommandRegistration kRegistered(kCommand, kUsage, &run_admin_command);

}  // namespace admin_command
}  // namespace dq::ctl
