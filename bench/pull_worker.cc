// The pull side of bench/pull.sh (not a test): adds jobs through libdqclient,
// or works a pull topic with THREADS workers, each reserving COUNT jobs at a
// time (a long poll) and acking each, until N jobs are acked in all.
//   pull_worker add  HOST:PORT TOPIC N DELAY_S      jobs p0..pN-1, batches of 500
//   pull_worker work HOST:PORT TOPIC N THREADS COUNT [batch]
// batch: each reserve's jobs are acked in one call (POST /v1/topics/{t}/ack);
// else one ack call per job. work prints "acked=N twice=T seconds=S".
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dq/client.h"

namespace dc = dq::client;

namespace {

dc::Client client_of(const std::string& server) {
  dc::Options options;
  options.servers = {server};
  options.timeout_ms = 10000;
  return dc::Client(options);
}

int add(const std::string& server, const std::string& topic, int count, double delay_s) {
  dc::Client client = client_of(server);
  std::vector<dc::BatchJob> batch;
  for (int i = 0; i < count; ++i) {
    batch.push_back(
        {"p" + std::to_string(i), "{\"n\":" + std::to_string(i) + "}", dc::When::delay(delay_s)});
    if (batch.size() == 500 || i + 1 == count) {
      auto added = client.add_batch(topic, batch);
      if (!added) {
        std::fprintf(stderr, "add: %s\n", added.error().message.c_str());
        return 1;
      }
      batch.clear();
    }
  }
  return 0;
}

int work(const std::string& server, const std::string& topic, int count, int threads, int per,
         bool batch_acks) {
  std::atomic<int> acked{0};
  std::atomic<int> failed{0};
  std::mutex lock;
  std::set<std::string> seen;
  int twice = 0;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      dc::Client client = client_of(server);
      auto end = std::chrono::steady_clock::now() + std::chrono::minutes(10);
      while (acked.load() < count && std::chrono::steady_clock::now() < end) {
        auto jobs = client.reserve(topic, {60, 2, per});
        if (!jobs) {
          ++failed;
          continue;
        }
        for (const auto& job : *jobs) {
          std::lock_guard<std::mutex> guard(lock);
          if (!seen.insert(job.id).second) ++twice;
        }
        if (batch_acks) {
          if (jobs->empty()) continue;
          auto results = client.ack_batch(topic, *jobs);
          if (!results) {
            failed += static_cast<int>(jobs->size());
            continue;
          }
          for (const auto& result : *results) {
            if (result.ok()) {
              ++acked;
            } else {
              ++failed;
            }
          }
          continue;
        }
        for (const auto& job : *jobs) {
          if (client.ack(job)) {
            ++acked;
          } else {
            ++failed;
          }
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("acked=%d twice=%d failed=%d seconds=%.2f\n", acked.load(), twice, failed.load(),
              seconds);
  return acked.load() == count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "add" && argc == 6) {
    return add(argv[2], argv[3], std::atoi(argv[4]), std::atof(argv[5]));
  }
  if (mode == "work" && (argc == 7 || argc == 8)) {
    bool batch_acks = argc == 8 && std::string(argv[7]) == "batch";
    return work(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]), std::atoi(argv[6]),
                batch_acks);
  }
  std::fprintf(stderr,
               "usage: pull_worker add HOST:PORT TOPIC N DELAY_S\n"
               "       pull_worker work HOST:PORT TOPIC N THREADS COUNT [batch]\n");
  return 2;
}
