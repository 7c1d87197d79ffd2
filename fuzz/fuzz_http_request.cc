// Fuzz target: dq's HTTP request handling, end to end in one process. The
// input is sent as raw bytes on a loopback connection to a real HttpApi
// (dq's HTTP server, routes, limits, JSON parsing and validation) whose one Redis
// shard is a closed port, so every request is answered without a Redis: a
// JSON error, a 503 for a job route, or the connection closed. Nothing may
// crash, and every status line dq writes must carry a JSON body.
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "common/core/config.h"
#include "common/core/shard.h"
#include "common/registry/registry.h"
#include "common/registry/topic_cache.h"
#include "common/store/async_job_store.h"
#include "server/api_auth.h"
#include "server/http_api.h"

namespace {

struct World {
  event_base* base = nullptr;
  dq::Config config;
  std::unique_ptr<dq::TopicCache> topics;
  std::unique_ptr<dq::AsyncJobStore> jobs;
  std::unique_ptr<dq::ApiAuth> auth;  // require_token off: every route is reachable
  std::unique_ptr<dq::HttpApi> http;
  sockaddr_in address{};
};

World* world = nullptr;
std::string* scratch_dir = nullptr;  // the registry's temp dir, removed at exit

int listening_socket(sockaddr_in* address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  address->sin_family = AF_INET;
  address->sin_port = 0;
  inet_pton(AF_INET, "127.0.0.1", &address->sin_addr);
  socklen_t length = sizeof *address;
  if (bind(fd, reinterpret_cast<sockaddr*>(address), length) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(address), &length) != 0) {
    std::abort();
  }
  return fd;
}

World* make_world() {
  auto* w = new World;
  char dir[] = "/tmp/dq-fuzz-http.XXXXXX";
  if (mkdtemp(dir) == nullptr) std::abort();
  scratch_dir = new std::string(dir);
  std::atexit([] { std::filesystem::remove_all(*scratch_dir); });
  w->config.sqlite_path = std::string(dir) + "/dq.db";
  w->config.pid_file = std::string(dir) + "/dqd.pid";
  w->config.max_body_bytes = 4096;
  w->config.max_request_bytes = 16384;
  w->config.max_batch_jobs = 10;
  w->config.shards = *dq::parse_shard_list("127.0.0.1:1");  // nothing listens there
  w->config.redis_connect_timeout_ms = 50;
  auto registry = dq::Registry::open(w->config.sqlite_path);
  if (!registry.is_ok()) std::abort();
  dq::Topic topic;
  topic.name = "orders";
  topic.callback_url = "http://127.0.0.1:9/cb";
  if (!(*registry)->add_topic(topic).is_ok()) std::abort();
  w->base = event_base_new();
  w->topics = std::make_unique<dq::TopicCache>(w->config.sqlite_path);
  (void)w->topics->refresh();
  w->jobs = std::make_unique<dq::AsyncJobStore>(w->base, w->config);
  w->jobs->start();
  w->auth = std::make_unique<dq::ApiAuth>(w->config);
  w->http = std::make_unique<dq::HttpApi>(w->base, *w->jobs, *w->topics, *w->auth, w->config);
  int fd = listening_socket(&w->address);
  if (!w->http->listen(fd).is_ok()) std::abort();
  close(fd);  // listen() keeps its own copy
  return w;
}

// Every reply dq writes is JSON: a status line's body starts with '{'
// (checked for the first answer).
void check_reply(const std::string& reply) {
  if (reply.compare(0, 5, "HTTP/") != 0) return;  // closed without a reply
  size_t end = reply.find("\r\n\r\n");
  if (end == std::string::npos) return;  // cut short by the close
  size_t body = end + 4;
  // A HEAD answer has no body: the next answer may follow at once.
  if (body < reply.size() && reply[body] != '{' && reply.compare(body, 5, "HTTP/") != 0 &&
      reply.find("\r\nContent-Length: 0") == std::string::npos) {
    std::fprintf(stderr, "reply body is not JSON:\n%s\n", reply.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (world == nullptr) world = make_world();
  int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&world->address), sizeof world->address) != 0) {
    std::abort();
  }
  size_t sent = 0;
  while (sent < size) {
    ssize_t n = send(client, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  shutdown(client, SHUT_WR);
  std::string reply;
  // Turn the loop until the server closes (or 200 turns: a request still
  // waiting for its body is closed by us, which is also a fine outcome).
  for (int turn = 0; turn < 200; ++turn) {
    event_base_loop(world->base, EVLOOP_NONBLOCK);
    pollfd p{client, POLLIN, 0};
    if (poll(&p, 1, 1) <= 0) continue;
    char buffer[4096];
    ssize_t n = recv(client, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(client);
  event_base_loop(world->base, EVLOOP_NONBLOCK);  // let the server see the close
  check_reply(reply);
  return 0;
}
