// The role table: every kind of child the master forks. Adding a role (the
// redis checker, the admin page) is one entry in roles.cc.
#pragma once

#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/listen.h"

namespace dq {

// Which inherited listening sockets a role keeps (the others are closed after fork).
enum class ListenUse { kNone, kApi, kAdmin };

struct RoleSpec {
  const char* name;   // in the status file: "server", "timer", ...
  const char* title;  // process title; numbered roles get "_<index>" appended
  bool numbered;      // dq-server_0, dq-server_1 ... vs a single dq-admin
  int (*count)(const Config& config);
  int (*run)(const Config& config, int index, const ListenSockets& sockets);
  ListenUse listens;
  bool reopens_logs_on_hup;  // only these get SIGHUP forwarded (default action kills)
};

const std::vector<RoleSpec>& all_roles();

std::string role_title(const RoleSpec& role, int index);

}  // namespace dq
