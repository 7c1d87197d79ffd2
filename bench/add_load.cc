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
//
// It shares the 2-core machine with the server it measures, so its own CPU
// is kept low: each request is one send() and each reply one recv() on a
// read event that stays armed (bufferevents cost five system calls per
// request: writev, two epoll_ctl, ioctl(FIONREAD), readv).
#include <arpa/inet.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/core/event_handles.h"

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
  dq::UniqueEventBase base;
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
  dq::UniqueEvent pace_timer;
};

struct Connection {
  Run* run = nullptr;
  int fd = -1;
  dq::UniqueEvent read_event;   // persistent while the connection is active
  dq::UniqueEvent write_event;  // armed while connecting or the socket is full
  bool active = false;          // connected and not finished
  std::string in;               // received bytes not yet taken as replies
  std::string out;              // request bytes the socket did not take yet
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
  if (run.settings.rate > 0) {
    return paced_job_json(run);
  }
  std::string due = run.settings.at_s > 0 ? ",\"at\":" + std::to_string(run.settings.at_s)
                                          : ",\"delay\":" + std::to_string(run.settings.delay_s);
  return "{\"id\":\"" + next_job_id(run) + "\",\"body\":" + kBody + due + "}";
}

std::string topic_for(Connection& c) {
  return "bench-" + std::to_string(c.sent_count % c.run->settings.topics);
}

void lose(Connection& c, const char* why) {
  std::fprintf(stderr, "add_load: connection lost (%s)\n", why);
  ++c.run->errors;
  c.active = false;
  event_del(c.read_event.get());
  event_del(c.write_event.get());
  event_base_loopbreak(c.run->base.get());
}

// Sends what the socket takes now; the rest waits for the write event.
void write_out(Connection& c, const std::string& bytes) {
  if (!c.out.empty()) {
    c.out += bytes;
    return;
  }
  ssize_t sent = send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    return lose(c, std::strerror(errno));
  }
  size_t taken = sent < 0 ? 0 : static_cast<size_t>(sent);
  if (taken < bytes.size()) {
    c.out.assign(bytes, taken);
    event_add(c.write_event.get(), nullptr);
  }
}

// No more requests on this connection; the loop ends when none is active.
void finish_connection(Connection& c) {
  c.active = false;
  event_del(c.read_event.get());
  for (Connection* other : c.run->connections) {
    if (other->active) {
      return;
    }
  }
  event_base_loopbreak(c.run->base.get());
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
        if (i > 0) {
          json += ',';
        }
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
  write_out(c, request);
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
    return finish_connection(c);
  }
  if (run.settings.rate > 0) {
    run.idle.push_back(&c);
    return;
  }
  send_request(c);
}

// Takes one whole HTTP reply (status line, headers, Content-Length body)
// from the front of `in` (from `at`), moving `at` past it.
bool take_http_reply(const std::string& in, size_t& at, bool& ok) {
  size_t end = in.find("\r\n\r\n", at);
  if (end == std::string::npos) {
    return false;
  }
  size_t header_len = end + 4 - at;
  std::string_view head(in.data() + at, header_len);
  size_t content_length = 0;
  for (const char* name : {"Content-Length:", "content-length:"}) {
    size_t found = head.find(name);
    if (found != std::string_view::npos) {
      content_length = std::strtoul(head.data() + found + 15, nullptr, 10);
    }
  }
  if (in.size() - at < header_len + content_length) {
    return false;
  }
  int status = std::atoi(head.data() + 9);
  ok = status == 201 || status == 200;
  at += header_len + content_length;
  return true;
}

bool take_beanstalk_reply(const std::string& in, size_t& at, bool& ok) {
  size_t end = in.find("\r\n", at);
  if (end == std::string::npos) {
    return false;
  }
  ok = in.compare(at, 8, "INSERTED") == 0;
  at = end + 2;
  return true;
}

void on_read(evutil_socket_t fd, short /*what*/, void* arg) {
  auto& c = *static_cast<Connection*>(arg);
  char chunk[65536];
  ssize_t got = recv(fd, chunk, sizeof chunk, 0);
  if (got == 0) {
    return lose(c, "closed by the server");
  }
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return;
    }
    return lose(c, std::strerror(errno));
  }
  c.in.append(chunk, static_cast<size_t>(got));
  size_t at = 0;
  bool ok = false;
  while (c.run->settings.mode == Mode::kBeanstalk ? take_beanstalk_reply(c.in, at, ok)
                                                  : take_http_reply(c.in, at, ok)) {
    finish_reply(c, ok);
    if (!c.active) {
      break;
    }
  }
  c.in.erase(0, at);
}

void start_requests(Connection& c) {
  c.active = true;
  event_add(c.read_event.get(), nullptr);
  if (c.run->settings.rate > 0) {
    c.run->idle.push_back(&c);
  } else {
    send_request(c);
  }
}

// Writable: the connect ended, or the socket takes the rest of a request.
void on_write(evutil_socket_t fd, short /*what*/, void* arg) {
  auto& c = *static_cast<Connection*>(arg);
  if (!c.active) {
    int error = 0;
    socklen_t len = sizeof error;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      return lose(c, std::strerror(error));
    }
    return start_requests(c);
  }
  std::string rest = std::move(c.out);
  c.out.clear();
  write_out(c, rest);
}

// Paced mode: every millisecond, send the jobs owed by the rate so far on
// connections that have nothing in flight.
void on_pace(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  Run& run = *static_cast<Run*>(arg);
  int64_t t = now_us();
  if (t >= run.stop_at_us) {
    // Stop sending; the loop ends when every reply in flight has come back.
    event_del(run.pace_timer.get());
    std::vector<Connection*> idle = std::move(run.idle);
    run.idle.clear();
    for (Connection* c : idle) {
      finish_connection(*c);
    }
    bool all_done = true;
    for (Connection* c : run.connections) {
      if (c->active) {
        all_done = false;
      }
    }
    if (all_done) {
      event_base_loopbreak(run.base.get());
    }
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
  if (text == "http") {
    return Mode::kHttp;
  }
  if (text == "http-batch") {
    return Mode::kHttpBatch;
  }
  if (text == "beanstalk") {
    return Mode::kBeanstalk;
  }
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
  if (argc > 6) {
    run.settings.batch = std::atoi(argv[6]);
  }
  if (argc > 7) {
    run.settings.topics = std::max(1, std::atoi(argv[7]));
  }
  if (argc > 8) {
    run.settings.delay_s = std::atoi(argv[8]);
  }
  if (const char* at = std::getenv("ADD_LOAD_AT")) {
    run.settings.at_s = std::atoll(at);
  }
  if (const char* count = std::getenv("ADD_LOAD_COUNT")) {
    run.settings.count = std::strtoull(count, nullptr, 10);
  }
  if (const char* rate = std::getenv("ADD_LOAD_RATE")) {
    run.settings.rate = std::atof(rate);
  }
  if (const char* due = std::getenv("ADD_LOAD_DUE_MS")) {
    run.settings.due_in_ms = std::atoll(due);
  }
  run.id_prefix = static_cast<uint32_t>(getpid() ^ now_us());
  run.base.reset(event_base_new());
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
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 &&
        errno != EINPROGRESS) {
      std::fprintf(stderr, "add_load: cannot connect to %s:%d: %s\n", run.settings.host.c_str(),
                   run.settings.port, std::strerror(errno));
      return 1;
    }
    c.read_event.reset(event_new(run.base.get(), c.fd, EV_READ | EV_PERSIST, on_read, &c));
    c.write_event.reset(event_new(run.base.get(), c.fd, EV_WRITE, on_write, &c));
    event_add(c.write_event.get(), nullptr);  // the connect's end
    run.connections.push_back(&c);
  }
  if (run.settings.rate > 0) {
    run.measure_from_us = now_us();  // paced runs count every job
    run.stop_at_us = run.measure_from_us + static_cast<int64_t>(run.settings.seconds * 1e6);
    run.paced_from_us = run.measure_from_us;
    run.pace_timer.reset(event_new(run.base.get(), -1, EV_PERSIST, on_pace, &run));
    timeval every_ms{0, 1000};
    event_add(run.pace_timer.get(), &every_ms);
  }
  event_base_dispatch(run.base.get());
  run.pace_timer.reset();
  for (Connection& c : connections) {
    c.read_event.reset();
    c.write_event.reset();
    close(c.fd);
  }
  run.base.reset();

  std::sort(run.latencies_us.begin(), run.latencies_us.end());
  auto pct = [&](double p) -> uint32_t {
    if (run.latencies_us.empty()) {
      return 0;
    }
    return run
        .latencies_us[static_cast<size_t>(p * static_cast<double>(run.latencies_us.size() - 1))];
  };
  double seconds = run.settings.seconds;
  if (run.settings.count > 0) {
    seconds = static_cast<double>(now_us() - started_us) / 1e6;
  }
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
