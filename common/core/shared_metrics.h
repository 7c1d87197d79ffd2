// Counters and histograms that every dq process on one host adds to, kept in
// one shared memory mapping. The master creates it before it forks the first
// child, so every child of every generation shares it: /metrics gives the
// same numbers whichever API server answers, and a reload or a respawn loses
// nothing. Only a restart of the master starts them from zero (Prometheus
// treats that as a counter reset). Queue counters (adds, deliveries, ...)
// are not here: they live in Redis ({dq}:totals), shared by every host.
//
// A series is named by a short key, e.g. "http\x1f" "add\x1f" "201"; the table
// has a fixed number of slots claimed lock-free, so a process killed at any
// instant leaves it usable. Keys longer than kKeyBytes or a full table count
// into overflow() rather than fail.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dq {

// Upper bounds (seconds) of the histogram buckets; +Inf is implicit.
inline constexpr double kLatencyBuckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,      2.5,   5,    10,    30,   60};
inline constexpr size_t kLatencyBucketCount = sizeof(kLatencyBuckets) / sizeof(double);

struct HistogramView {
  uint64_t buckets[kLatencyBucketCount + 1];  // not cumulative; last is +Inf
  uint64_t count;
  double sum_seconds;
};

class SharedMetrics {
 public:
  static constexpr size_t kSlots = 2048;
  static constexpr size_t kKeyBytes = 120;

  // The host's metrics. The master calls it before forking (the mapping is
  // then inherited); a process that was not forked by a master (a test
  // running one role) gets a mapping of its own on first use.
  static SharedMetrics& instance();

  // Adds one observation of `seconds` to the series `key`.
  void observe(std::string_view key, double seconds);
  // Adds `n` to the series' count without a duration.
  void add(std::string_view key, uint64_t n = 1);

  // Every series that has been used, in slot order.
  void for_each(const std::function<void(std::string_view key, const HistogramView&)>& fn) const;
  uint64_t overflow() const;

  // Joins label values into a key: "a\x1f" "b\x1f" "c".
  static std::string key(std::initializer_list<std::string_view> parts);

 private:
  struct Slot;
  struct Table;
  explicit SharedMetrics(Table* table) : table_(table) {}
  Slot* find_or_claim(std::string_view key);

  Table* table_;
};

// One Redis command of this host that failed, could not be sent or whose
// outcome is unknown, on blocking and async connections alike:
// dq_redis_command_errors_total{shard} (shard "host:port").
void count_redis_command_error(std::string_view shard);

}  // namespace dq
