// JobCounts: the five numbers every delivery test prints, from the jobs a
// test had accepted (id -> due_at_ms of the 201) and the requests a callback
// server answered 2xx (by X-DQ-Id, with their arrival time).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace dq::test {

struct JobCounts {
  size_t accepted = 0;
  size_t delivered = 0;   // accepted jobs that arrived at least once
  size_t duplicated = 0;  // accepted jobs that arrived more than once
  size_t lost = 0;        // accepted jobs that never arrived
  size_t early = 0;       // accepted jobs whose first arrival came before due_at_ms

  std::string line() const {
    char text[160];
    std::snprintf(text, sizeof text,
                  "accepted %zu, delivered %zu, duplicated %zu, lost %zu, early %zu", accepted,
                  delivered, duplicated, lost, early);
    return text;
  }
};

struct Arrived {
  std::string id;
  int64_t arrived_ms = 0;  // wall clock
};

inline JobCounts count_jobs(const std::map<std::string, int64_t>& accepted,
                            const std::vector<Arrived>& arrivals) {
  std::map<std::string, std::vector<int64_t>> by_id;
  for (const auto& arrival : arrivals) {
    by_id[arrival.id].push_back(arrival.arrived_ms);
  }
  JobCounts counts;
  counts.accepted = accepted.size();
  for (const auto& [id, due_ms] : accepted) {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      ++counts.lost;
      continue;
    }
    ++counts.delivered;
    if (it->second.size() > 1) {
      ++counts.duplicated;
    }
    int64_t first = it->second.front();
    for (int64_t at : it->second) {
      first = std::min(first, at);
    }
    if (first < due_ms) {
      ++counts.early;
    }
  }
  return counts;
}

}  // namespace dq::test
