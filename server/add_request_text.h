// An HTTP add request's text -> the job to add. A clean request (the members
// id, body and delay or at, each once, keys without escapes) is read by the
// scanner of common/core/json_scan.h without building a JSON document; anything
// else, every refusal included, takes the document path below, so the
// answers and log lines are those of build_add_request (server/job_request.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/registry/topic_cache.h"
#include "server/job_request.h"

namespace dq {

struct ParsedAdd {
  Result<AddRequest> request = Status(Code::kInternal, "not parsed");
  bool is_json = true;    // false: the text is not JSON (400; nothing is logged)
  std::string logged_id;  // on a refusal: the id as JSON text, or "-"
};

ParsedAdd parse_add_text(const std::string& topic, std::string_view text, TopicCache& topics,
                         const Config& config, int64_t now_ms);

// The same through a whole nlohmann document: the fallback, and the
// reference the differential test and fuzz target compare against.
ParsedAdd parse_add_text_dom(const std::string& topic, std::string_view text, TopicCache& topics,
                             const Config& config, int64_t now_ms);

}  // namespace dq
