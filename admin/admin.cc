// dq-admin: one libevent loop with evhttp on the inherited socket. It never
// waits on Redis: the counts, listings and dead letters are the asynchronous
// operations of common/store/ over the app's own connections on this loop,
// so requests are served concurrently and a stalled shard delays only the
// answers that need it (to [redis] command_timeout_ms). SQLite calls (users,
// sessions, topics) stay synchronous. Looking up or deleting one job still
// uses the blocking JobStore.
#include "admin/admin.h"

#include <event2/event.h>
#include <event2/http.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "admin/admin_app.h"
#include "admin/exchange.h"
#include "common/core/event_handles.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"

namespace dq {
namespace {

constexpr const char* kTitle = "dq-admin";
constexpr size_t kMaxBodyBytes = size_t{1024} * 1024;

struct AdminProcess {
  const Config& config;
  event_base* base;
  AdminApp* app;
  int ticks = 0;
};

void on_request(evhttp_request* request, void* arg) {
  auto* process = static_cast<AdminProcess*>(arg);
  auto exchange = std::make_shared<Exchange>(request);
  try {
    process->app->handle(*exchange);
  } catch (const std::exception& error) {
    // A bug must not take the page down for everyone.
    err_log().error("dq-admin: {} /{}: {}", exchange->method(),
                    exchange->path().empty() ? "" : exchange->path()[0], error.what());
    if (exchange->status() == 0) {
      exchange->reply_error(500, "internal error");
    }
  }
}

void on_stop(evutil_socket_t /*signal_number*/, short /*what*/, void* arg) {
  event_base_loopbreak(static_cast<AdminProcess*>(arg)->base);
}

void on_tick(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* process = static_cast<AdminProcess*>(arg);
  reopen_logs_if_asked(process->config.log_dir, process->config.log_level, kTitle);
  if (++process->ticks % 60 == 0) {
    process->app->housekeeping();
  }
}

int wait_for_stop() {
  while (!stop_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

}  // namespace

int run_admin(const Config& config, int listen_fd) {
  install_stop_handlers();
  signal(SIGPIPE, SIG_IGN);
  if (listen_fd < 0) {
    err_log().error("{}: no socket for [admin] listen = {}; the page is off", kTitle,
                    config.admin_listen);
    return wait_for_stop();
  }
  UniqueEventBase base(event_base_new());
  if (!base) {
    err_log().critical("{}: cannot create an event loop", kTitle);
    return 1;
  }
  auto app = AdminApp::open(config, base.get());
  if (!app.is_ok()) {
    err_log().critical("{}: {}", kTitle, app.status().message());
    return 1;
  }
  UniqueEvhttp http(evhttp_new(base.get()));
  if (!http) {
    err_log().critical("{}: cannot create an event loop", kTitle);
    return 1;
  }
  AdminProcess process{config, base.get(), app->get()};
  evhttp_set_max_body_size(http.get(), kMaxBodyBytes);
  evhttp_set_timeout(http.get(), 30);
  evhttp_set_allowed_methods(http.get(), EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                             EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
  evhttp_set_gencb(http.get(), &on_request, &process);
  int fd = dup(listen_fd);
  close(listen_fd);  // keep only the copy evhttp owns and closes
  if (fd < 0 || evhttp_accept_socket(http.get(), fd) != 0) {
    err_log().critical("{}: cannot serve on [admin] listen = {}", kTitle, config.admin_listen);
    return 1;
  }
  err_log().info("{} serving http://{}/", kTitle, config.admin_listen);

  UniqueEvent on_term(evsignal_new(base.get(), SIGTERM, &on_stop, &process));
  UniqueEvent on_int(evsignal_new(base.get(), SIGINT, &on_stop, &process));
  UniqueEvent tick(event_new(base.get(), -1, EV_PERSIST, &on_tick, &process));
  event_add(on_term.get(), nullptr);
  event_add(on_int.get(), nullptr);
  timeval every{1, 0};
  event_add(tick.get(), &every);
  event_base_dispatch(base.get());
  // Requests still waiting on Redis are answered now, while evhttp exists.
  (*app)->shutdown();
  err_log().info("{} stopped", kTitle);
  return 0;
}

}  // namespace dq
