// Tally: counts one scenario's jobs from what the producers were told and
// what the callback server saw, and prints the suite's table.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "tests/fault/callback_faults.h"
#include "tests/fault/load.h"

namespace dq::test {

struct TallyRow {
  std::string scenario;
  size_t accepted = 0;       // adds answered 201 or 200
  size_t delivered = 0;      // accepted jobs whose callback answered 2xx at least once
  size_t duplicated = 0;     // accepted jobs answered 2xx more than once
  size_t lost = 0;           // accepted jobs never answered 2xx, or still held by dq at the end
  size_t early = 0;          // jobs with a callback before the earliest due time any add attempt of
                             // theirs may have set (callback host clock)
  size_t before_answer = 0;  // not early, but before the due_at_ms of the answer that accepted
                             // them (an earlier attempt's copy was kept)
  size_t attempts = 0;       // every callback arrival, failed ones too
  size_t given_up = 0;       // adds never answered (not accepted, so not counted as lost)
  std::vector<std::string> lost_keys;  // the first few, to look for in dq's logs
  double seconds = 0;
  std::string note;  // why duplicates are allowed, or what went wrong
};

// `still_held`: accepted keys that dq still answers for (GET is not 404)
// once everything should have been delivered.
TallyRow tally(const std::string& scenario, const std::vector<AcceptedJob>& accepted,
               const std::vector<Arrival>& arrivals, const std::set<std::string>& still_held);

std::string table_header();
std::string table_line(const TallyRow& row);

}  // namespace dq::test
