// Tells systemd (Type=notify units, packaging/dq.service) where the master
// is: READY=1 once the first generation runs, RELOADING=1 while a reload
// starts a new one, STOPPING=1 on stop. Without NOTIFY_SOCKET (not started
// by systemd) each call does nothing.
#pragma once

#include <string>

namespace dq {

void notify_systemd_ready(const std::string& status);
void notify_systemd_reloading();
void notify_systemd_stopping();

}  // namespace dq
