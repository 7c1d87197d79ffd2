// The roles dqd forks, with their counts from the config and entry points.
#include "master/roles.h"

#include "admin/admin.h"
#include "checker/checker.h"
#include "consumer/consumer.h"
#include "server/server.h"
#include "timer/timer.h"

namespace dq {

const std::vector<RoleSpec>& all_roles() {
  static const std::vector<RoleSpec> kRoles = {
      {"server", "dq-server", true, [](const Config& c) { return c.server_workers; },
       [](const Config& c, int i, const ListenSockets& s) { return run_server(c, i, s); },
       ListenUse::kApi, true},
      {"timer", "dq-timer", true, [](const Config& c) { return c.timer_processes; },
       [](const Config& c, int i, const ListenSockets&) { return run_timer(c, i); },
       ListenUse::kNone, true},
      {"consumer", "dq-consume", true, [](const Config& c) { return c.consumer_processes; },
       [](const Config& c, int i, const ListenSockets&) { return run_consumer(c, i); },
       ListenUse::kNone, true},
      {"checker", "dq-redis-checker", false, [](const Config&) { return 1; },
       [](const Config& c, int i, const ListenSockets&) { return run_checker(c, i); },
       ListenUse::kNone, true},
      {"admin", "dq-admin", false, [](const Config& c) { return c.admin_listen.empty() ? 0 : 1; },
       [](const Config& c, int, const ListenSockets& s) { return run_admin(c, s.admin_fd); },
       ListenUse::kAdmin, true},
  };
  return kRoles;
}

std::string role_title(const RoleSpec& role, int index) {
  return role.numbered ? std::string(role.title) + "_" + std::to_string(index) : role.title;
}

}  // namespace dq
