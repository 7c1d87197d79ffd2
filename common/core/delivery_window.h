// A topic's delivery window (quiet hours are the time outside it): the days
// and hours of a time zone in which its jobs may be delivered.
//   "Mon-Fri 09:00-18:00 Asia/Shanghai"
//   "Mon-Fri 09:00-12:00,14:00-18:00 Sat 10:00-14:00 Europe/Paris"
//   "22:00-06:00"                  (every day; the zone given by the caller)
//   "Fri,Sat 20:00-02:00 America/New_York"
// Groups of [days] hours; days are Mon..Sun (case-insensitive), lists and
// ranges ("Fri-Mon" wraps over the week end), every day when left out; hours
// are HH:MM-HH:MM lists, 24:00 may end one, and a range that ends before it
// starts runs across midnight into the next day (it belongs to the day it
// starts on: "Fri 22:00-06:00" is Friday night to Saturday 06:00). The last
// word may name the zone. ';' may separate groups.
// The window follows the zone's wall clock: when the clock jumps forward
// into the window, it opens at the jump; an hour the clock repeats is inside
// (or outside) both times.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/core/status.h"
#include "common/core/time_zone.h"

namespace dq {

class DeliveryWindow {
 public:
  // `zone` is used when the text names none. kInvalid says which word is
  // wrong and why.
  static Result<DeliveryWindow> parse(const std::string& text, const TimeZone& zone);

  const std::string& text() const { return text_; }
  const TimeZone& zone() const { return zone_; }

  bool is_open_at(int64_t epoch_ms) const;
  // `epoch_ms` itself when open then, else the first instant after it at
  // which the window opens (nullopt only if it never opens in two weeks,
  // which needs a window that a jump of the clock skips whole).
  std::optional<int64_t> next_open(int64_t epoch_ms) const;

 private:
  struct Hours {
    int start_s = 0;  // seconds into the day
    int end_s = 0;    // up to 86400; before start_s: runs into the next day
  };
  struct Group {
    uint8_t days = 0;  // bit 0 = Sunday .. bit 6 = Saturday
    std::vector<Hours> hours;
  };
  explicit DeliveryWindow(TimeZone zone) : zone_(std::move(zone)) {}
  bool is_open_at_wall(int64_t wall_s) const;

  std::string text_;
  TimeZone zone_;
  std::vector<Group> groups_;
};

}  // namespace dq
