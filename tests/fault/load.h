// Load: producer threads that add jobs over HTTP to one or more dqd hosts
// until stopped, retrying every add whose outcome is not known (no answer,
// 503, 504) the way a careful producer would: a retry is always safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dq::test {

struct AcceptedJob {
  std::string key;  // "topic/id"
  int64_t due_at_ms = 0;
  // The earliest due time an attempt of this add may have set: an attempt
  // whose outcome is unknown (no answer, 504) may have stored the job then,
  // with its own delay from then.
  int64_t earliest_due_ms = 0;
};

// One attempt of an add and its answer (steady clock).
struct AddAnswer {
  int64_t sent_ms = 0;
  int64_t answered_ms = 0;
  long status = 0;  // 0: no answer
};

class Load {
 public:
  // Jobs go round robin over `topics` and `hosts` (base URLs), due 0.2 s to
  // 2 s after their add; ids start with `prefix`. An add is retried with the
  // same id and body 100 ms after a 503 (nothing written) and
  // retry_after_unknown_ms after a 504 or no answer (it may have been written).
  Load(std::vector<std::string> hosts, std::vector<std::string> topics, std::string prefix,
       int threads = 2, int pause_ms = 5, int retry_after_unknown_ms = 100);
  ~Load();
  void start();
  void stop();  // waits for the adds in flight (and their retries)

  std::vector<AcceptedJob> accepted() const;
  std::vector<AddAnswer> answers() const;     // every attempt, retries too
  int given_up() const { return given_up_; }  // adds never answered 200/201

 private:
  void produce();

  std::vector<std::string> hosts_;
  std::vector<std::string> topics_;
  std::string prefix_;
  int threads_;
  int pause_ms_;
  int retry_after_unknown_ms_;
  std::atomic<bool> running_{false};
  std::atomic<int> next_{0};
  std::atomic<int> given_up_{0};
  std::vector<std::thread> workers_;
  mutable std::mutex mutex_;
  std::vector<AcceptedJob> accepted_;
  std::vector<AddAnswer> answers_;
};

}  // namespace dq::test
