// Fuzz target: the parsers of the time rules (common/core/cron_spec.h,
// delivery_window.h, late_policy.h) and `at` read in a zone (time_text.h).
// Any text: no crash, and what they accept behaves: a schedule's next runs
// come after the instant asked and after each other, a window is open at its
// next opening, a late policy reads back from its own text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/core/cron_spec.h"
#include "common/core/delivery_window.h"
#include "common/core/json.h"
#include "common/core/late_policy.h"
#include "common/core/time_text.h"
#include "common/core/time_zone.h"

namespace {

// 2026-03-29 00:30 UTC: half an hour before Paris jumps forward.
constexpr int64_t kAskedAt = 1774744200000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  static const dq::TimeZone paris = *dq::TimeZone::find("Europe/Paris");
  auto spec = dq::CronSpec::parse(text, paris);
  if (spec.is_ok()) {
    int64_t before = kAskedAt;
    for (int64_t run : spec->next_runs(kAskedAt, 3)) {
      if (run <= before) std::abort();
      before = run;
    }
  }
  auto window = dq::DeliveryWindow::parse(text, paris);
  if (window.is_ok()) {
    auto open = window->next_open(kAskedAt);
    if (open && (*open < kAskedAt || !window->is_open_at(*open))) std::abort();
  }
  auto policy = dq::LatePolicy::parse(text);
  if (policy.is_ok()) {
    auto again = dq::LatePolicy::parse(policy->text());
    if (!again.is_ok() || again->text() != policy->text()) std::abort();
  }
  (void)dq::resolve_due_time(dq::Json(text), "Europe/Paris");
  (void)dq::TimeZone::find(text);
  return 0;
}
