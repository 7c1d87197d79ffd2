// Implements PrometheusText (see prometheus_text.h).
#include "common/core/prometheus_text.h"

#include <cmath>
#include <cstdio>

namespace dq {
namespace {

std::string number_text(double value) {
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

std::string labels_text(const Labels& labels) {
  if (labels.empty()) {
    return "";
  }
  std::string text = "{";
  for (const auto& [name, value] : labels) {
    if (text.size() > 1) {
      text += ',';
    }
    text += name + "=\"" + escape_label_value(value) + "\"";
  }
  return text + "}";
}

}  // namespace

std::string escape_label_value(const std::string& value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '"') {
      escaped += "\\\"";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

void PrometheusText::family(const std::string& name, const std::string& type,
                            const std::string& help) {
  text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::sample(const std::string& name, const Labels& labels, double value) {
  text_ += name + labels_text(labels) + " " + number_text(value) + "\n";
}

void PrometheusText::histogram(const std::string& name, const Labels& labels,
                               const HistogramView& view) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kLatencyBucketCount; ++i) {
    cumulative += view.buckets[i];
    Labels with_le = labels;
    with_le.emplace_back("le", i < kLatencyBucketCount ? number_text(kLatencyBuckets[i]) : "+Inf");
    sample(name + "_bucket", with_le, static_cast<double>(cumulative));
  }
  sample(name + "_sum", labels, view.sum_seconds);
  sample(name + "_count", labels, static_cast<double>(view.count));
}

}  // namespace dq
