// The process-wide stop flag set by SIGTERM/SIGINT.
#include "common/stop_flag.h"

#include <signal.h>

#include <atomic>

namespace dq {
namespace {

std::atomic<bool> g_stop{false};

void on_stop_signal(int) { g_stop.store(true); }

}  // namespace

void install_stop_handlers() {
  g_stop.store(false);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

bool stop_requested() { return g_stop.load(); }

void request_stop() { g_stop.store(true); }

}  // namespace dq
