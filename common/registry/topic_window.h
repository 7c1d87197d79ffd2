// A topic's delivery window (Topic::delivery_window) as the roles use it:
// parsed in the topic's zone, and whether it holds the topic's jobs at an
// instant. Quiet hours are the time outside the window (docs/delivery.md,
// "Quiet hours").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/core/delivery_window.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq {

// The window of `topic` read in its zone: the text's own, else the topic's
// tz, else UTC. nullopt when the topic has none. kInvalid names the word
// that is wrong (validate_topic refuses such a text).
Result<std::optional<DeliveryWindow>> parse_topic_window(const Topic& topic);

// While a window is closed: when it opens (epoch ms). A window that never
// opens in the two weeks next_open looks at (one that a jump of the clock
// skips whole) is treated as opening a day later, when it is asked again.
int64_t window_opens_at(const DeliveryWindow& window, int64_t now_ms);

// The parsed windows of a process's topics, parsed again only when a
// topic's window or zone changes: the timer and the consumer ask every
// round.
class TopicWindows {
 public:
  // The topic's window, nullptr when it has none (or, never expected of a
  // checked registry, one that does not parse).
  const DeliveryWindow* find(const Topic& topic);
  // Whether the topic has a window and it is closed at now_ms.
  bool closed(const Topic& topic, int64_t now_ms) {
    const DeliveryWindow* window = find(topic);
    return window != nullptr && !window->is_open_at(now_ms);
  }

 private:
  struct Entry {
    std::string text;
    std::string tz;
    std::optional<DeliveryWindow> window;
  };
  std::map<std::string, Entry> windows_;  // by topic name
};

}  // namespace dq
