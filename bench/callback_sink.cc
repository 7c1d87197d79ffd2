// Callback sink for bench/run's lateness rows (not a test): an HTTP server
// that answers 200 to every request and logs, per request, its arrival time
// with microseconds and the X-DQ-Topic and X-DQ-Id headers:
//   <unix seconds>.<microseconds> <topic> <id>
// the format of the nginx log the drain uses, six decimals instead of three.
// nginx's $msec has millisecond resolution, and the lateness target compares
// p99s of 3-4 ms within 20 %: a millisecond step is a third of the figure.
// Lines are buffered and written every 100 ms and at SIGTERM/SIGINT.
// Usage: callback_sink PORT LOG_FILE
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "common/core/event_handles.h"

namespace {

struct Sink {
  FILE* log = nullptr;
  std::string pending;  // lines not yet written
  event_base* base = nullptr;
};

void on_request(evhttp_request* request, void* arg) {
  auto* sink = static_cast<Sink*>(arg);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  evkeyvalq* headers = evhttp_request_get_input_headers(request);
  const char* topic = evhttp_find_header(headers, "X-DQ-Topic");
  const char* id = evhttp_find_header(headers, "X-DQ-Id");
  char stamp[48];
  std::snprintf(stamp, sizeof stamp, "%lld.%06ld ", static_cast<long long>(now.tv_sec),
                now.tv_nsec / 1000);
  sink->pending += stamp;
  sink->pending += topic != nullptr ? topic : "-";
  sink->pending += ' ';
  sink->pending += id != nullptr ? id : "-";
  sink->pending += '\n';
  dq::UniqueEvbuffer body(evbuffer_new());
  evbuffer_add(body.get(), "ok\n", 3);
  evhttp_send_reply(request, 200, "OK", body.get());
}

void write_pending(Sink* sink) {
  if (!sink->pending.empty()) {
    std::fwrite(sink->pending.data(), 1, sink->pending.size(), sink->log);
    std::fflush(sink->log);
    sink->pending.clear();
  }
}

void on_tick(evutil_socket_t, short, void* arg) { write_pending(static_cast<Sink*>(arg)); }

void on_stop(evutil_socket_t, short, void* arg) {
  auto* sink = static_cast<Sink*>(arg);
  write_pending(sink);
  event_base_loopexit(sink->base, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: callback_sink PORT LOG_FILE\n");
    return 2;
  }
  Sink sink;
  sink.log = std::fopen(argv[2], "a");
  if (sink.log == nullptr) {
    std::perror(argv[2]);
    return 1;
  }
  std::signal(SIGPIPE, SIG_IGN);
  dq::UniqueEventBase base(event_base_new());
  sink.base = base.get();
  dq::UniqueEvhttp http(evhttp_new(sink.base));
  if (evhttp_bind_socket(http.get(), "127.0.0.1", static_cast<uint16_t>(std::atoi(argv[1]))) != 0) {
    std::fprintf(stderr, "callback_sink: cannot listen on 127.0.0.1:%s\n", argv[1]);
    return 1;
  }
  evhttp_set_gencb(http.get(), on_request, &sink);
  dq::UniqueEvent tick(event_new(sink.base, -1, EV_PERSIST, on_tick, &sink));
  timeval every{0, 100000};  // 100 ms
  event_add(tick.get(), &every);
  dq::UniqueEvent term(evsignal_new(sink.base, SIGTERM, on_stop, &sink));
  dq::UniqueEvent interrupt(evsignal_new(sink.base, SIGINT, on_stop, &sink));
  event_add(term.get(), nullptr);
  event_add(interrupt.get(), nullptr);
  event_base_dispatch(sink.base);
  write_pending(&sink);
  std::fclose(sink.log);
  return 0;  // the events, then the HTTP server, then the loop are freed
}
