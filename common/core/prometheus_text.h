// Writing the Prometheus text exposition format (version 0.0.4): one family
// at a time, HELP and TYPE first, label values escaped.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/core/shared_metrics.h"

namespace dq {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // Starts a family; type is counter, gauge or histogram.
  void family(const std::string& name, const std::string& type, const std::string& help);
  void sample(const std::string& name, const Labels& labels, double value);
  // name_bucket (cumulative, with le), name_sum and name_count.
  void histogram(const std::string& name, const Labels& labels, const HistogramView& view);

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// "a\"b" -> a\"b with \\, \" and \n escaped, as label values need.
std::string escape_label_value(const std::string& value);

}  // namespace dq
