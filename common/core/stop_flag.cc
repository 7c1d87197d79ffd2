// The process-wide stop flag set by SIGTERM/SIGINT, and whether the master
// that forked this process is gone.
#include "common/core/stop_flag.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "common/core/log.h"

namespace dq {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reopen_logs{false};
int g_master_pid = 0;

void on_stop_signal(int) { g_stop.store(true); }
void on_hangup_signal(int) { g_reopen_logs.store(true); }

}  // namespace

void install_stop_handlers() {
  g_stop.store(false);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  action.sa_handler = on_hangup_signal;
  sigaction(SIGHUP, &action, nullptr);
}

void reopen_logs_if_asked(const std::string& dir, const std::string& level,
                          const std::string& title) {
  if (g_reopen_logs.exchange(false)) {
    init_logging(dir, level, title);
  }
}

bool stop_requested() { return g_stop.load(); }

void request_stop() { g_stop.store(true); }

void remember_master(int master_pid) { g_master_pid = master_pid; }

bool master_died() { return g_master_pid > 0 && getppid() != g_master_pid; }

}  // namespace dq
