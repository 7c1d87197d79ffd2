// Implements common/registry/topic_window.h.
#include "common/registry/topic_window.h"

namespace dq {
namespace {

constexpr int64_t kNeverOpensRetryMs = int64_t{86400} * 1000;

}  // namespace

Result<std::optional<DeliveryWindow>> parse_topic_window(const Topic& topic) {
  if (topic.delivery_window.empty()) {
    return std::optional<DeliveryWindow>();
  }
  auto zone = TimeZone::find(topic.tz.empty() ? std::string("UTC") : topic.tz);
  if (!zone.is_ok()) {
    return zone.status();
  }
  auto window = DeliveryWindow::parse(topic.delivery_window, *zone);
  if (!window.is_ok()) {
    return window.status();
  }
  return std::optional<DeliveryWindow>(std::move(*window));
}

int64_t window_opens_at(const DeliveryWindow& window, int64_t now_ms) {
  return window.next_open(now_ms).value_or(now_ms + kNeverOpensRetryMs);
}

const DeliveryWindow* TopicWindows::find(const Topic& topic) {
  if (topic.delivery_window.empty()) {
    windows_.erase(topic.name);
    return nullptr;
  }
  Entry& entry = windows_[topic.name];
  if (!entry.window || entry.text != topic.delivery_window || entry.tz != topic.tz) {
    auto parsed = parse_topic_window(topic);
    entry.text = topic.delivery_window;
    entry.tz = topic.tz;
    entry.window = parsed.is_ok() ? std::move(*parsed) : std::nullopt;
  }
  return entry.window ? &*entry.window : nullptr;
}

}  // namespace dq
