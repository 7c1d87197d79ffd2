// Tally (see tally.h).
#include "tests/fault/tally.h"

#include <cstdio>
#include <map>
#include <set>

namespace dq::test {

TallyRow tally(const std::string& scenario, const std::vector<AcceptedJob>& accepted,
               const std::vector<Arrival>& arrivals, const std::set<std::string>& still_held) {
  TallyRow row;
  row.scenario = scenario;
  std::map<std::string, int64_t> due;       // the earliest possible
  std::map<std::string, int64_t> answered;  // the accepting answer's
  for (const auto& job : accepted) {
    due[job.key] = job.earliest_due_ms;
    answered[job.key] = job.due_at_ms;
  }
  row.accepted = due.size();
  row.attempts = arrivals.size();
  std::map<std::string, int> answered_2xx;
  std::set<std::string> early;
  std::set<std::string> before_answer;
  for (const auto& arrival : arrivals) {
    auto it = due.find(arrival.key);
    if (it == due.end()) {
      continue;  // a job whose add was never answered
    }
    if (arrival.arrived_ms < it->second) {
      early.insert(arrival.key);
    }
    if (arrival.arrived_ms < answered[arrival.key]) {
      before_answer.insert(arrival.key);
    }
    if (arrival.status >= 200 && arrival.status < 300) {
      ++answered_2xx[arrival.key];
    }
  }
  for (const auto& [key, times] : answered_2xx) {
    ++row.delivered;
    row.duplicated += times > 1;
  }
  // Lost: never answered 2xx, or answered but still held by dq after the
  // settle time (its ack never landed; the suite does not wait for more).
  for (const auto& [key, due_at] : due) {
    bool lost = answered_2xx.count(key) == 0 || still_held.count(key) != 0;
    row.lost += lost;
    if (lost && row.lost_keys.size() < 10) {
      row.lost_keys.push_back(key);
    }
  }
  row.early = early.size();
  row.before_answer = before_answer.size() - early.size();
  return row;
}

std::string table_header() {
  char line[256];
  std::snprintf(line, sizeof(line), "%-26s %8s %9s %10s %5s %5s %8s %8s %6s  %s", "scenario",
                "accepted", "delivered", "duplicated", "lost", "early", "attempts", "gave_up",
                "secs", "note");
  return line;
}

std::string table_line(const TallyRow& row) {
  char line[256];
  std::snprintf(line, sizeof(line), "%-26s %8zu %9zu %10zu %5zu %5zu %8zu %8zu %6.1f  ",
                row.scenario.c_str(), row.accepted, row.delivered, row.duplicated, row.lost,
                row.early, row.attempts, row.given_up, row.seconds);
  return line + row.note;
}

}  // namespace dq::test
