// Load (see load.h).
#include "tests/fault/load.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "common/core/json.h"
#include "tests/support/http_client.h"

namespace dq::test {
namespace {

// How long one add is retried before the producer gives up on it.
constexpr int kRetryForMs = 20000;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Load::Load(std::vector<std::string> hosts, std::vector<std::string> topics, std::string prefix,
           int threads, int pause_ms, int retry_after_unknown_ms)
    : hosts_(std::move(hosts)),
      topics_(std::move(topics)),
      prefix_(std::move(prefix)),
      threads_(threads),
      pause_ms_(pause_ms),
      retry_after_unknown_ms_(retry_after_unknown_ms) {}

Load::~Load() { stop(); }

void Load::start() {
  running_ = true;
  for (int i = 0; i < threads_; ++i) {
    workers_.emplace_back([this] { produce(); });
  }
}

void Load::stop() {
  running_ = false;
  for (auto& worker : workers_) {
    worker.join();
  }
  workers_.clear();
}

std::vector<AcceptedJob> Load::accepted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return accepted_;
}

std::vector<AddAnswer> Load::answers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return answers_;
}

void Load::produce() {
  HttpClient http;
  while (running_) {
    int n = next_++;
    const std::string& topic = topics_[n % topics_.size()];
    std::string id = prefix_ + std::to_string(n);
    int delay_ms = 200 + (n % 19) * 100;
    std::string doc =
        Json{{"id", id}, {"body", Json{{"n", n}}}, {"delay", delay_ms / 1000.0}}.dump();
    int64_t earliest_unknown_ms =
        INT64_MAX;  // sent time of the first attempt with no known outcome
    int64_t give_up_at = steady_ms() + kRetryForMs;
    const std::string path = "/v1/topics/" + topic + "/jobs";
    bool done = false;
    for (size_t attempt = 0; !done && steady_ms() < give_up_at; ++attempt) {
      const std::string& host = hosts_[(n + attempt) % hosts_.size()];
      int64_t sent_ms = wall_ms();
      int64_t sent_steady_ms = steady_ms();
      HttpResult result = http.request("POST", host + path, doc, 3000);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        answers_.push_back({sent_steady_ms, steady_ms(), result.status});
      }
      if (result.status == 200 || result.status == 201) {
        int64_t due = result.json()["due_at_ms"].get<int64_t>();
        int64_t earliest =
            std::min(due, earliest_unknown_ms == INT64_MAX ? due : earliest_unknown_ms + delay_ms);
        std::string job = topic + "/";
        job += id;
        std::lock_guard<std::mutex> lock(mutex_);
        accepted_.push_back({std::move(job), due, earliest});
        done = true;
      } else if (result.status == 0 || result.status >= 500) {
        int wait_ms = 100;
        if (result.status == 0 || result.status == 504) {  // 503: nothing written
          earliest_unknown_ms = std::min(earliest_unknown_ms, sent_ms);
          wait_ms = retry_after_unknown_ms_;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
      } else {
        break;  // refused (4xx): a bug the tally shows as given up
      }
    }
    if (!done) {
      ++given_up_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
  }
}

}  // namespace dq::test
