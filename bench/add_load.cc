// Add load generator for bench/run (not a test). One libevent loop holds
// CONNECTIONS connections; each sends a request, waits for its reply, sends
// the next (no pipelining), for SECONDS after a one-second warm-up. The same
// generator drives every peer, so their rates compare:
//   http         POST /v1/topics/<topic>/jobs, one job per request (dq's HTTP API)
//   http-batch   POST /v1/topics/<topic>/jobs/batch with BATCH jobs per request
//   beanstalk    beanstalkd "put" with a delay (beanstalkd's protocol)
// Every job has a unique 16-byte id and a 64-byte body, due DELAY_S seconds
// later (far enough that nothing is delivered while the run lasts). Topics
// rotate over TOPICS names (bench-0 ...). Prints one line:
//   ops=<replies> jobs=<jobs> seconds=<s> rate=<jobs/s> p50_us= p99_us= max_us= errors=<n>
// ADD_LOAD_COUNT=N stops after N jobs (no warm-up; the rate is over the whole
// run); ADD_LOAD_AT=<unix s> makes every job due at that second.
// ADD_LOAD_RATE=R paces R jobs/s (open loop) instead, each due ADD_LOAD_DUE_MS
// (1000) after it is sent, with its due ms in its id (for lateness).
// Usage: add_load MODE HOST PORT CONNECTIONS SECONDS [BATCH] [TOPICS] [DELAY_S]
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum class Mode { kHttp, kHttpBatch, kBeanstalk };

struct Settings {
  Mode mode = Mode::kHttp;
  std::string host;
  int port = 0;
  int connections = 50;
  double seconds = 10;
  int batch = 100;
  int topics = 1;
  int delay_s = 3600;
  int64_t at_s = 0;    // ADD_LOAD_AT: every job due at this unix second instead
  uint64_t count = 0;  // ADD_LOAD_COUNT: stop after this many jobs (0: run SECONDS)
  double rate = 0;     // ADD_LOAD_RATE: paced jobs/s (0: closed loop, as fast as replies come)
  int64_t due_in_ms = 1000;  // paced: each job due this long after it is sent (ADD_LOAD_DUE_MS)
};

// The 64-byte stored body: a JSON string of 62 characters plus its quotes.
const std::string kBody = "\"" + std::string(62, 'x') + "\"";

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Connection;

struct Run {
  Settings settings;
  event_base* base = nullptr;
  uint64_t next_id = 0;
  uint32_t id_prefix = 0;  // per process, so two runs on one Redis never collide
  int64_t measure_from_us = 0;
  int64_t stop_at_us = 0;
  uint64_t replies = 0;
  uint64_t jobs = 0;
  uint64_t errors = 0;
  std::vector<uint32_t> latencies_us;
  std::vector<Connection*> connections;
  std::vector<Connection*> idle;  // paced mode: connections with nothing in flight
  int64_t paced_from_us = 0;
  uint64_t paced_sent = 0;
  uint64_t paced_behind = 0;  // ticks when a job was owed and no connection was free
  event* pace_timer = nullptr;
};

struct Connection {
  Run* run = nullptr;
  bufferevent* bev = nullptr;
  int64_t sent_us = 0;
  int jobs_in_request = 0;
  uint64_t sent_count = 0;
};

std::string next_job_id(Run& run) {
  char id[17];
  std::snprintf(id, sizeof id, "%04x%012llx", run.id_prefix & 0xffff,
                static_cast<unsigned long long>(run.next_id++));
  return id;
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Paced jobs carry their due time in the id ("<due ms>-<2 hex>", 16 bytes),
// so the callback sink can compute lateness from the X-DQ-Id header alone.
std::string paced_job_json(Run& run) {
  int64_t due_ms = wall_ms() + run.settings.due_in_ms;
  char id[32];
  std::snprintf(id, sizeof id, "%013lld-%02x", static_cast<long long>(due_ms),
                static_cast<unsigned>(run.next_id++ & 0xff));
  char at[32];
  std::snprintf(at, sizeof at, "%.3f", static_cast<double>(due_ms) / 1000.0);
  return std::string("{\"id\":\"") + id + "\",\"body\":" + kBody + ",\"at\":" + at + "}";
}

std::string job_json(Run& run) {
  if (run.settings.rate > 0) return paced_job_json(run);
  std::string due = run.settings.at_s > 0 ? ",\"at\":" + std::to_string(run.settings.at_s)
                                          : ",\"delay\":" + std::to_string(run.settings.delay_s);
  return "{\"id\":\"" + next_job_id(run) + "\",\"body\":" + kBody + due + "}";
}

std::string topic_for(Connection& c) {
  return "bench-" + std::to_string(c.sent_count % c.run->settings.topics);
}

void send_request(Connection& c) {
  Run& run = *c.run;
  std::string request;
  if (run.settings.mode == Mode::kBeanstalk) {
    // put <pri> <delay> <ttr> <bytes>: the id travels in the body, as a
    // beanstalkd producer would carry its business id.
    std::string body = next_job_id(run) + kBody.substr(16);
    request = "put 1024 " + std::to_string(run.settings.delay_s) + " 60 " +
              std::to_string(body.size()) + "\r\n" + body + "\r\n";
    c.jobs_in_request = 1;
  } else {
    std::string path = "/v1/topics/" + topic_for(c) + "/jobs";
    std::string json;
    if (run.settings.mode == Mode::kHttp) {
      json = job_json(run);
      c.jobs_in_request = 1;
    } else {
      path += "/batch";
      json = "{\"jobs\":[";
      for (int i = 0; i < run.settings.batch; ++i) {
        if (i > 0) json += ',';
        json += job_json(run);
      }
      json += "]}";
      c.jobs_in_request = run.settings.batch;
    }
    request = "POST " + path + " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n" +
              "Content-Length: " + std::to_string(json.size()) + "\r\n\r\n" + json;
  }
  ++c.sent_count;
  c.sent_us = now_us();
  bufferevent_write(c.bev, request.data(), request.size());
}

void finish_reply(Connection& c, bool ok) {
  Run& run = *c.run;
  int64_t t = now_us();
  // A counted run (ADD_LOAD_COUNT) counts every reply; a timed one skips the warm-up.
  // A paced run counts every reply, also those that come after its last send.
  bool counted = run.settings.count > 0 || run.settings.rate > 0 ||
                 (c.sent_us >= run.measure_from_us && t <= run.stop_at_us);
  if (counted) {
    ++run.replies;
    if (ok) {
      run.jobs += static_cast<uint64_t>(c.jobs_in_request);
    } else {
      ++run.errors;
    }
    run.latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(t - c.sent_us, UINT32_MAX)));
  }
  bool counted_out = run.settings.count > 0 && run.next_id >= run.settings.count;
  if (t >= run.stop_at_us || counted_out) {
    bufferevent_disable(c.bev, EV_READ | EV_WRITE);
    bool all_done = true;
    for (Connection* other : run.connections) {
      if (other->bev != nullptr && (bufferevent_get_enabled(other->bev) & EV_READ) != 0) {
        all_done = false;
      }
    }
    if (all_done) event_base_loopbreak(run.base);
    return;
  }
  if (run.settings.rate > 0) {
    run.idle.push_back(&c);
    return;
  }
  send_request(c);
}

// Reads whole HTTP replies (status line, headers, Content-Length body).
bool take_http_reply(evbuffer* in, bool& ok) {
  evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, nullptr);
  if (end.pos < 0) return false;
  size_t header_len = static_cast<size_t>(end.pos) + 4;
  std::string head(header_len, '\0');
  evbuffer_copyout(in, head.data(), header_len);
  size_t content_length = 0;
  for (const char* name : {"Content-Length:", "content-length:"}) {
    size_t at = head.find(name);
    if (at != std::string::npos) content_length = std::strtoul(head.c_str() + at + 15, nullptr, 10);
  }
  if (evbuffer_get_length(in) < header_len + content_length) return false;
  int status = std::atoi(head.c_str() + 9);
  ok = status == 201 || status == 200;
  evbuffer_drain(in, header_len + content_length);
  return true;
}

bool take_beanstalk_reply(evbuffer* in, bool& ok) {
  size_t line_len = 0;
  char* line = evbuffer_readln(in, &line_len, EVBUFFER_EOL_CRLF_STRICT);
  if (line == nullptr) return false;
  ok = std::strncmp(line, "INSERTED", 8) == 0;
  std::free(line);
  return true;
}

void on_read(bufferevent* bev, void* arg) {
  auto& c = *static_cast<Connection*>(arg);
  evbuffer* in = bufferevent_get_input(bev);
  bool ok = false;
  while (c.run->settings.mode == Mode::kBeanstalk ? take_beanstalk_reply(in, ok)
                                                  : take_http_reply(in, ok)) {
    finish_reply(c, ok);
    if ((bufferevent_get_enabled(bev) & EV_READ) == 0) return;
  }
}

void on_event(bufferevent* bev, short what, void* arg) {
  auto& c = *static_cast<Connection*>(arg);
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    int one = 1;
    setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (c.run->settings.rate > 0) {
      c.run->idle.push_back(&c);
    } else {
      send_request(c);
    }
    return;
  }
  std::fprintf(stderr, "add_load: connection lost (events 0x%x)\n", what);
  ++c.run->errors;
  bufferevent_free(bev);
  c.bev = nullptr;
  event_base_loopbreak(c.run->base);
}

// Paced mode: every millisecond, send the jobs owed by the rate so far on
// connections that have nothing in flight.
void on_pace(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  Run& run = *static_cast<Run*>(arg);
  int64_t t = now_us();
  if (t >= run.stop_at_us) {
    // Stop sending; the loop ends when every reply in flight has come back.
    event_del(run.pace_timer);
    for (Connection* idle : run.idle) bufferevent_disable(idle->bev, EV_READ | EV_WRITE);
    run.idle.clear();
    bool all_done = true;
    for (Connection* c : run.connections) {
      if ((bufferevent_get_enabled(c->bev) & EV_READ) != 0) all_done = false;
    }
    if (all_done) event_base_loopbreak(run.base);
    return;
  }
  auto owed =
      static_cast<uint64_t>(static_cast<double>(t - run.paced_from_us) / 1e6 * run.settings.rate);
  while (run.paced_sent < owed) {
    if (run.idle.empty()) {
      ++run.paced_behind;
      break;
    }
    Connection* c = run.idle.back();
    run.idle.pop_back();
    ++run.paced_sent;
    send_request(*c);
  }
}

Mode parse_mode(const std::string& text) {
  if (text == "http") return Mode::kHttp;
  if (text == "http-batch") return Mode::kHttpBatch;
  if (text == "beanstalk") return Mode::kBeanstalk;
  std::fprintf(stderr, "add_load: unknown mode %s (http, http-batch, beanstalk)\n", text.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: add_load http|http-batch|beanstalk HOST PORT CONNECTIONS SECONDS "
                 "[BATCH] [TOPICS] [DELAY_S]\n");
    return 2;
  }
  Run run;
  run.settings.mode = parse_mode(argv[1]);
  run.settings.host = argv[2];
  run.settings.port = std::atoi(argv[3]);
  run.settings.connections = std::atoi(argv[4]);
  run.settings.seconds = std::atof(argv[5]);
  if (argc > 6) run.settings.batch = std::atoi(argv[6]);
  if (argc > 7) run.settings.topics = std::max(1, std::atoi(argv[7]));
  if (argc > 8) run.settings.delay_s = std::atoi(argv[8]);
  if (const char* at = std::getenv("ADD_LOAD_AT")) run.settings.at_s = std::atoll(at);
  if (const char* count = std::getenv("ADD_LOAD_COUNT"))
    run.settings.count = std::strtoull(count, nullptr, 10);
  if (const char* rate = std::getenv("ADD_LOAD_RATE")) run.settings.rate = std::atof(rate);
  if (const char* due = std::getenv("ADD_LOAD_DUE_MS")) run.settings.due_in_ms = std::atoll(due);
  run.id_prefix = static_cast<uint32_t>(getpid() ^ now_us());
  run.base = event_base_new();
  int64_t started_us = now_us();
  run.measure_from_us = now_us() + 1000000;  // one second of warm-up
  run.stop_at_us = run.measure_from_us + static_cast<int64_t>(run.settings.seconds * 1e6);

  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(run.settings.port));
  inet_pton(AF_INET, run.settings.host.c_str(), &address.sin_addr);
  std::vector<Connection> connections(static_cast<size_t>(run.settings.connections));
  for (Connection& c : connections) {
    c.run = &run;
    c.bev = bufferevent_socket_new(run.base, -1, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(c.bev, on_read, nullptr, on_event, &c);
    bufferevent_enable(c.bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(c.bev, reinterpret_cast<sockaddr*>(&address), sizeof address) !=
        0) {
      std::fprintf(stderr, "add_load: cannot connect to %s:%d\n", run.settings.host.c_str(),
                   run.settings.port);
      return 1;
    }
    run.connections.push_back(&c);
  }
  if (run.settings.rate > 0) {
    run.measure_from_us = now_us();  // paced runs count every job
    run.stop_at_us = run.measure_from_us + static_cast<int64_t>(run.settings.seconds * 1e6);
    run.paced_from_us = run.measure_from_us;
    run.pace_timer = event_new(run.base, -1, EV_PERSIST, on_pace, &run);
    timeval every_ms{0, 1000};
    event_add(run.pace_timer, &every_ms);
  }
  event_base_dispatch(run.base);
  if (run.pace_timer != nullptr) event_free(run.pace_timer);
  for (Connection& c : connections) {
    if (c.bev != nullptr) bufferevent_free(c.bev);
  }
  event_base_free(run.base);

  std::sort(run.latencies_us.begin(), run.latencies_us.end());
  auto pct = [&](double p) -> uint32_t {
    if (run.latencies_us.empty()) return 0;
    return run
        .latencies_us[static_cast<size_t>(p * static_cast<double>(run.latencies_us.size() - 1))];
  };
  double seconds = run.settings.seconds;
  if (run.settings.count > 0) seconds = static_cast<double>(now_us() - started_us) / 1e6;
  std::printf(
      "ops=%llu jobs=%llu seconds=%.1f rate=%.0f p50_us=%u p99_us=%u max_us=%u errors=%llu "
      "behind=%llu\n",
      static_cast<unsigned long long>(run.replies), static_cast<unsigned long long>(run.jobs),
      seconds, static_cast<double>(run.jobs) / seconds, pct(0.5), pct(0.99),
      run.latencies_us.empty() ? 0 : run.latencies_us.back(),
      static_cast<unsigned long long>(run.errors),
      static_cast<unsigned long long>(run.paced_behind));
  return run.errors > 0 && run.jobs == 0 ? 1 : 0;
}
