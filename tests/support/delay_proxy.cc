// DelayProxy (see delay_proxy.h).
#include "tests/support/delay_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <stdexcept>

namespace dq::test {
namespace {

using Clock = std::chrono::steady_clock;

int connect_local(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Waits up to 100 ms for `fd` to be readable; false on a timeout.
bool readable(int fd) {
  pollfd waiting{fd, POLLIN, 0};
  return poll(&waiting, 1, 100) > 0;
}

}  // namespace

// One way of one connection: a reader thread queues what it reads with the
// time it may go out; a writer thread sends it then (unless stalled).
struct DelayProxy::Direction {
  struct Chunk {
    Clock::time_point due;
    std::string bytes;
  };
  int from = -1;
  int to = -1;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Chunk> queue;
  bool closed = false;  // the reader saw EOF or an error
  std::thread reader;
  std::thread writer;

  void read_loop(const std::atomic<bool>& stopping, const std::atomic<int>& delay_ms) {
    char buffer[16384];
    while (!stopping) {
      if (!readable(from)) {
        continue;
      }
      ssize_t n = recv(from, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        break;
      }
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back({Clock::now() + std::chrono::milliseconds(delay_ms.load()),
                       std::string(buffer, static_cast<size_t>(n))});
      changed.notify_one();
    }
    std::lock_guard<std::mutex> lock(mutex);
    closed = true;
    changed.notify_one();
  }

  void write_loop(const std::atomic<bool>& stopping, const std::atomic<bool>& stalled) {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      if (queue.empty()) {
        if (closed) {
          break;
        }
        changed.wait_for(lock, std::chrono::milliseconds(50));
        continue;
      }
      if (stalled || queue.front().due > Clock::now()) {
        changed.wait_for(lock, std::chrono::milliseconds(5));
        continue;
      }
      std::string bytes = std::move(queue.front().bytes);
      queue.pop_front();
      lock.unlock();
      bool sent =
          send(to, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
      lock.lock();
      if (!sent) {
        break;
      }
    }
    shutdown(to, SHUT_WR);    // the other side sees the EOF this side saw
    shutdown(from, SHUT_RD);  // and a failed send ends the reader too
  }
};

struct DelayProxy::Connection {
  int client = -1;
  int upstream = -1;
  Direction up;    // client -> Redis
  Direction down;  // Redis -> client

  ~Connection() {
    for (Direction* direction : {&up, &down}) {
      if (direction->reader.joinable()) {
        direction->reader.join();
      }
      if (direction->writer.joinable()) {
        direction->writer.join();
      }
    }
    close(client);
    close(upstream);
  }
};

DelayProxy::DelayProxy(int upstream_port, int delay_ms)
    : upstream_port_(upstream_port), delay_ms_(delay_ms) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      listen(listen_fd_, 128) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    throw std::runtime_error("DelayProxy: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

DelayProxy::~DelayProxy() {
  stopping_ = true;
  acceptor_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& connection : connections_) {
    shutdown(connection->client, SHUT_RDWR);
    shutdown(connection->upstream, SHUT_RDWR);
  }
  connections_.clear();  // joins
  close(listen_fd_);
}

std::string DelayProxy::address() const { return "127.0.0.1:" + std::to_string(port_); }

void DelayProxy::stall(bool on) { stalled_ = on; }

void DelayProxy::accept_loop() {
  while (!stopping_) {
    if (!readable(listen_fd_)) {
      continue;
    }
    int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) {
      continue;
    }
    int upstream = connect_local(upstream_port_);
    if (upstream < 0) {  // the shard is down: so is its proxy
      close(client);
      continue;
    }
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto connection = std::make_unique<Connection>();
    connection->client = client;
    connection->upstream = upstream;
    for (Direction* direction : {&connection->up, &connection->down}) {
      bool up = direction == &connection->up;
      direction->from = up ? client : upstream;
      direction->to = up ? upstream : client;
      direction->reader =
          std::thread([this, direction] { direction->read_loop(stopping_, delay_ms_); });
      direction->writer =
          std::thread([this, direction] { direction->write_loop(stopping_, stalled_); });
    }
    std::lock_guard<std::mutex> lock(mutex_);
    connections_.push_back(std::move(connection));
  }
}

}  // namespace dq::test
