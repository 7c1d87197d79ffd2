// run_server: wires one API server process together (topics, job service,
// HTTP API, legacy protocol) on a libevent loop, and drains on SIGTERM. On
// SIGTERM it also closes its copies of the listening sockets, so that when
// the master died (SIGTERM from PR_SET_PDEATHSIG) a new dqd can bind at once.
#include "server/server.h"

#include <event2/event.h>
#include <signal.h>

#include <algorithm>
#include <memory>

#include "common/core/clock.h"
#include "common/core/event_handles.h"
#include "common/core/log.h"
#include "common/core/stop_flag.h"
#include "common/registry/topic_cache.h"
#include "common/store/async_job_store.h"
#include "server/api_auth.h"
#include "server/http_api.h"
#include "server/legacy_server.h"

namespace dq {
namespace {

constexpr int kRequestLogFlushMs = 100;

struct ServerProcess {
  const Config& config;
  int index;
  ListenSockets sockets;  // inherited from the master; closed when stopping
  event_base* base;
  TopicCache topics;
  ApiAuth auth;  // [server] require_token
  AsyncJobStore jobs;
  HttpApi http;
  std::unique_ptr<LegacyServer> legacy;
  int64_t drain_deadline_ms = -1;

  ServerProcess(const Config& c, int i, const ListenSockets& s, event_base* b)
      : config(c),
        index(i),
        sockets(s),
        base(b),
        topics(c.sqlite_path),
        auth(c),
        jobs(b, c),
        http(b, jobs, topics, auth, c) {}

  bool drained() const {
    return http.active() == 0 && (legacy == nullptr || legacy->connections() == 0) &&
           jobs.pending() == 0;
  }
};

void on_stop_signal(evutil_socket_t signal_number, short /*what*/, void* arg) {
  auto* process = static_cast<ServerProcess*>(arg);
  if (process->drain_deadline_ms >= 0) {
    return;
  }
  if (master_died()) {
    err_log().warn(
        "the master died: releasing the listening sockets, finishing {} requests in flight",
        process->http.active());
  } else {
    err_log().info("signal {}: stop accepting, finish {} requests in flight", signal_number,
                   process->http.active());
  }
  // Finish a little before the master's own deadline ([master]
  // drain_timeout_ms, then SIGKILL), so waiting requests still get answers.
  int64_t drain = process->config.drain_timeout_ms;
  int64_t margin = std::max<int64_t>(50, std::min<int64_t>(500, drain / 5));
  process->drain_deadline_ms = monotonic_ms() + std::max<int64_t>(0, drain - margin);
  process->http.stop_accepting();
  if (process->legacy) {
    process->legacy->stop_accepting();
  }
  // Neither listener holds the sockets any more; drop the inherited
  // descriptors too. The master (when alive) and the next generation keep
  // their own copies, so nothing is refused during a reload.
  close_listen_sockets(&process->sockets);
}

void on_reopen_logs(evutil_socket_t /*signal_number*/, short /*what*/, void* arg) {
  auto* process = static_cast<ServerProcess*>(arg);
  init_logging(process->config.log_dir, process->config.log_level,
               "dq-server_" + std::to_string(process->index));
}

// Every tick: refresh topics when due; when draining, stop once idle.
void on_tick(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* process = static_cast<ServerProcess*>(arg);
  process->topics.refresh_if_older(process->config.registry_refresh_ms);
  process->auth.refresh_if_older(1000);  // a deleted token stops working within a second
  if (process->drain_deadline_ms < 0) {
    return;
  }
  if (process->drained()) {
    event_base_loopbreak(process->base);
  } else if (monotonic_ms() > process->drain_deadline_ms) {
    err_log().warn("drain deadline passed with {} requests unanswered", process->http.active());
    event_base_loopbreak(process->base);
  }
}

}  // namespace

int run_server(const Config& config, int index, const ListenSockets& sockets) {
  signal(SIGPIPE, SIG_IGN);
  UniqueEventBase base(event_base_new());
  if (!base) {
    err_log().critical("cannot create an event loop");
    return 1;
  }
  ServerProcess process(config, index, sockets, base.get());
  Status loaded = process.topics.refresh();
  if (!loaded.is_ok()) {
    err_log().error("cannot read topics from {}: {}", config.sqlite_path, loaded.message());
  }
  process.jobs.start();
  // Take no request before every shard's first connect has ended: this
  // server may be a reload's new generation or a respawn, sharing the
  // listening sockets with servers that can answer now, and a request it
  // took meanwhile would fail with "shard is down". Bounded by the connect
  // timeout (the shards' tick, every 100 ms, ends a slow connect).
  int64_t connect_deadline = monotonic_ms() + config.redis_connect_timeout_ms + 200;
  while (!process.jobs.first_connects_ended() && monotonic_ms() < connect_deadline) {
    event_base_loop(base.get(), EVLOOP_ONCE);
  }
  Status listening = process.http.listen(sockets.http_fd);
  if (!listening.is_ok()) {
    err_log().critical("{}", listening.message());
    return 1;
  }
  if (sockets.legacy_fd >= 0) {
    process.legacy = std::make_unique<LegacyServer>(base.get(), sockets.legacy_fd, process.jobs,
                                                    process.topics, process.auth, config);
  }

  UniqueEvent on_term(evsignal_new(base.get(), SIGTERM, &on_stop_signal, &process));
  UniqueEvent on_int(evsignal_new(base.get(), SIGINT, &on_stop_signal, &process));
  UniqueEvent on_hup(evsignal_new(base.get(), SIGHUP, &on_reopen_logs, &process));
  UniqueEvent tick(event_new(base.get(), -1, EV_PERSIST, &on_tick, &process));
  // The request log reaches its file at most kRequestLogFlushMs after a line
  // (one write for thousands of lines instead of one per loop turn), when its
  // buffer is half full, on SIGHUP and at exit (docs/decisions.md).
  UniqueEvent log_flush(evtimer_new(
      base.get(), [](evutil_socket_t, short, void*) { flush_request_log(); }, nullptr));
  defer_request_log_flush([event = log_flush.get()] {
    if (evtimer_pending(event, nullptr)) {
      return;
    }
    timeval soon{0, suseconds_t{kRequestLogFlushMs} * 1000};
    evtimer_add(event, &soon);
  });
  event_add(on_term.get(), nullptr);
  event_add(on_int.get(), nullptr);
  event_add(on_hup.get(), nullptr);
  timeval every{0, suseconds_t{50} * 1000};
  event_add(tick.get(), &every);

  event_base_dispatch(base.get());
  // Requests still waiting for Redis (drain deadline passed) are answered
  // with 503 now, before the servers that hold them are destroyed.
  process.jobs.shutdown();
  event_base_loop(base.get(), EVLOOP_NONBLOCK);  // flush those answers if the sockets take them
  defer_request_log_flush(nullptr);              // writes what is left
  return 0;
}

}  // namespace dq
