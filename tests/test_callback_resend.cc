// End-to-end: one delivery attempt reaches the receiver at most once. A
// callback receiver that answers the first request of each connection (500)
// and, on a kept-alive connection, reads the next request and then resets
// the connection (SO_LINGER 0) or closes it. libcurl sends a request again
// when a reused connection dies before an answer; dq lets it only when
// nothing of the request was written. Every request the receiver read is
// counted against the attempts dq recorded (the job's attempts, the dead
// letter). Real consumer and timer processes, real redis-server, a real TCP
// receiver.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/delivery_world.h"
#include "tests/support/store_reads.h"

using dq::now_ms;
using dq::test::DeliveryWorld;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A receiver that misbehaves on kept-alive connections, counting every
// request it read whole (by X-DQ-Id, with its X-DQ-Attempt).
class ResettingReceiver {
 public:
  ResettingReceiver() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int on = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(listen(listen_fd_, 128) == 0);
    socklen_t length = sizeof address;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~ResettingReceiver() {
    stop_ = true;
    acceptor_.join();
    for (auto& thread : connections_) {
      thread.join();
    }
    close(listen_fd_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/cb"; }

  struct Seen {
    std::string id;
    int attempt = 0;
    int64_t arrived_ms = 0;
  };
  std::vector<Seen> seen() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }
  size_t connections() const { return accepted_; }
  size_t resets() const { return resets_; }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd wait{listen_fd_, POLLIN, 0};
      if (poll(&wait, 1, 50) <= 0) {
        continue;
      }
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        continue;
      }
      size_t number = accepted_++;
      connections_.emplace_back([this, fd, number] { serve(fd, number); });
    }
  }

  // Reads one whole request into *request; false when the peer closed or the test ends.
  bool read_request(int fd, std::string* buffer, std::string* head) {
    while (true) {
      size_t end = buffer->find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        size_t at = buffer->find("Content-Length: ");
        if (at != std::string::npos && at < end) {
          length = std::stoul(buffer->substr(at + 16));
        }
        if (buffer->size() >= end + 4 + length) {
          *head = buffer->substr(0, end);
          buffer->erase(0, end + 4 + length);
          return true;
        }
      }
      pollfd wait{fd, POLLIN, 0};
      if (stop_) {
        return false;
      }
      if (poll(&wait, 1, 50) <= 0) {
        continue;
      }
      char chunk[4096];
      ssize_t got = recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) {
        return false;
      }
      buffer->append(chunk, static_cast<size_t>(got));
    }
  }

  static std::string header(const std::string& head, const std::string& name) {
    size_t at = head.find(name + ": ");
    if (at == std::string::npos) {
      return "";
    }
    size_t start = at + name.size() + 2;
    return head.substr(start, head.find("\r\n", start) - start);
  }

  void serve(int fd, size_t number) {
    std::string buffer;
    std::string head;
    for (int on_connection = 0; read_request(fd, &buffer, &head); ++on_connection) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        seen_.push_back(
            {header(head, "X-DQ-Id"), std::atoi(header(head, "X-DQ-Attempt").c_str()), now_ms()});
      }
      if (on_connection == 0) {
        static const char kAnswer[] =
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
        send(fd, kAnswer, sizeof kAnswer - 1, MSG_NOSIGNAL);
        continue;  // kept alive: libcurl reuses it
      }
      // The request was read whole: now the connection dies without an answer.
      if (number % 2 == 0) {
        linger reset{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      }
      ++resets_;
      break;
    }
    close(fd);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> accepted_{0};
  std::atomic<size_t> resets_{0};
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // only the acceptor thread adds
  mutable std::mutex mutex_;
  std::vector<Seen> seen_;
};

}  // namespace

TEST_CASE("a receiver that resets kept-alive connections: one request per recorded attempt") {
  constexpr int kJobs = 30;
  constexpr int kMaxAttempts = 4;
  ResettingReceiver receiver;
  DeliveryWorld world(100);
  world.config().consumer_concurrency = 8;
  auto topic = world.topic("resets");
  topic.callback_url = receiver.url();
  topic.max_attempts = kMaxAttempts;
  world.add_topic(topic);
  world.start_timer();
  world.start_consumer();
  std::map<std::string, int64_t> due;
  int64_t at = now_ms();
  for (int n = 0; n < kJobs; ++n) {
    std::string id = "r" + std::to_string(n);
    world.add_job("resets", id, at);
    due[id] = at;
  }

  // Every attempt fails (500 or a dead connection): each job ends dead.
  // A count the shard could not give yet (a busy machine) is "not yet".
  auto dead_now = [&] {
    auto counted = dq::test::dead_count(world.store(), "resets");
    return counted.is_ok() ? *counted : int64_t{-1};
  };
  int64_t deadline = now_ms() + 60000;
  while (now_ms() < deadline && dead_now() < kJobs) {
    sleep_ms(50);
  }
  auto counted = dq::test::dead_count(world.store(), "resets");
  REQUIRE_MESSAGE(counted.is_ok(), counted.status().message());
  REQUIRE(*counted == kJobs);
  sleep_ms(500);  // a late request would arrive by now

  std::map<std::string, int> requests;                // requests read, per job
  std::map<std::string, std::multiset<int>> numbers;  // X-DQ-Attempt of each
  size_t early = 0;
  for (const auto& seen : receiver.seen()) {
    ++requests[seen.id];
    numbers[seen.id].insert(seen.attempt);
    if (seen.arrived_ms < due[seen.id]) {
      ++early;
    }
  }
  size_t total_requests = 0;
  size_t total_attempts = 0;
  size_t extra = 0;     // requests beyond the attempts recorded
  size_t repeated = 0;  // an attempt number seen more than once
  size_t lost = 0;      // jobs not dead with all their attempts
  for (const auto& [id, when] : due) {
    auto job = world.store().get("resets", id);
    REQUIRE(job.is_ok());
    int attempts = job->attempts;
    total_attempts += static_cast<size_t>(attempts);
    total_requests += static_cast<size_t>(requests[id]);
    if (requests[id] > attempts) {
      extra += static_cast<size_t>(requests[id] - attempts);
    }
    for (int attempt : numbers[id]) {
      if (numbers[id].count(attempt) > 1) {
        ++repeated;
        break;
      }
    }
    if (job->state != dq::JobState::kDead || attempts != kMaxAttempts) {
      ++lost;
    }
    CHECK_MESSAGE(requests[id] == attempts,
                  id << ": " << requests[id] << " requests for " << attempts << " attempts");
  }
  std::printf(
      "resetting receiver: accepted %d, delivered 0 (every attempt fails by design), duplicated "
      "%zu (requests beyond the recorded attempts), lost %zu, early %zu; requests read %zu, "
      "attempts recorded %zu, dead letters %lld; connections %zu, reset or closed after reading "
      "%zu\n",
      kJobs, extra, lost, early, total_requests, total_attempts,
      static_cast<long long>(*dq::test::dead_count(world.store(), "resets")),
      receiver.connections(), receiver.resets());
  CHECK(receiver.resets() > 0);  // the receiver did kill connections after reading
  CHECK(extra == 0);
  CHECK(repeated == 0);
  CHECK(lost == 0);
  CHECK(early == 0);
  CHECK(total_requests == total_attempts);
  CHECK(total_attempts == static_cast<size_t>(kJobs * kMaxAttempts));
}
