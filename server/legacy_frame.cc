// Legacy protocol framing: parsing request frames and building reply frames.
#include "server/legacy_frame.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace dq {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string dump_compact(const Json& json) {
  // replace: a body with invalid UTF-8 must not throw out of a reply.
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

ParsedFrame parse_legacy_frame(const char* data, size_t length, size_t max_json_bytes) {
  ParsedFrame parsed;
  size_t header = std::min(length, kLegacyHeaderBytes);
  for (size_t i = 0; i < header; ++i) {
    if (!is_digit(data[i])) {
      parsed.result = FrameResult::kBadHeader;
      parsed.reason = "bad frame: expected 4 decimal digits giving the JSON length, then the JSON";
      return parsed;
    }
  }
  if (length < kLegacyHeaderBytes) {
    return parsed;  // kNeedMore
  }

  size_t announced = 0;
  for (size_t i = 0; i < kLegacyHeaderBytes; ++i) {
    announced = announced * 10 + static_cast<size_t>(data[i] - '0');
  }
  size_t limit = std::min(max_json_bytes, kLegacyMaxJsonBytes);
  // JSON never starts with a digit here (a request is an object), so a 5th
  // digit means a length of 5+ digits that the frame cannot carry.
  bool longer_header =
      announced > 0 && length > kLegacyHeaderBytes && is_digit(data[kLegacyHeaderBytes]);
  if (announced > limit || longer_header) {
    parsed.result = FrameResult::kTooLarge;
    parsed.reason =
        "frame too large: a request may carry at most " + std::to_string(limit) + " bytes of JSON";
    return parsed;
  }
  if (length < kLegacyHeaderBytes + announced) {
    return parsed;  // kNeedMore
  }
  parsed.result = FrameResult::kFrame;
  parsed.consumed = kLegacyHeaderBytes + announced;
  parsed.json.assign(data + kLegacyHeaderBytes, announced);
  return parsed;
}

std::string frame_legacy_json(const std::string& json) {
  char header[8];
  std::snprintf(header, sizeof header, "%04zu", json.size());
  return header + json;
}

std::string legacy_failure_frame(const std::string& reason) {
  std::string json = dump_compact(Json{{"code", 0}, {"msg", reason}, {"data", Json::array()}});
  if (json.size() > kLegacyMaxJsonBytes) {
    json = dump_compact(
        Json{{"code", 0}, {"msg", reason.substr(0, 512) + "..."}, {"data", Json::array()}});
  }
  return frame_legacy_json(json);
}

std::string legacy_success_frame(const Json& data) {
  std::string json = dump_compact(Json{{"code", 1}, {"msg", "succ"}, {"data", data}});
  if (json.size() > kLegacyMaxJsonBytes) {
    return legacy_failure_frame("reply too large for the legacy framing (" +
                                std::to_string(json.size()) +
                                " bytes of JSON, at most 9999): use the HTTP API for this job");
  }
  return frame_legacy_json(json);
}

}  // namespace dq
