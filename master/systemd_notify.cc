// Implements the sd_notify calls (see systemd_notify.h).
#include "master/systemd_notify.h"

#include <systemd/sd-daemon.h>
#include <unistd.h>

namespace dq {

void notify_systemd_ready(const std::string& status) {
  std::string message = "READY=1\nMAINPID=" + std::to_string(getpid()) + "\nSTATUS=" + status;
  sd_notify(0, message.c_str());
}

void notify_systemd_reloading() { sd_notify(0, "RELOADING=1"); }

void notify_systemd_stopping() { sd_notify(0, "STOPPING=1"); }

}  // namespace dq
