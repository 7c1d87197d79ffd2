#include "common/store/reply_values.h"

#include <charconv>
#include <cstdlib>

namespace dq {

bool reply_int(const redisReply* reply, int64_t* out) {
  if (reply->type == REDIS_REPLY_INTEGER) {
    *out = reply->integer;
    return true;
  }
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    // Most are integers: from_chars, without the copy and strtod below.
    const char* last = reply->str + reply->len;
    int64_t whole = 0;
    auto parsed = std::from_chars(reply->str, last, whole);
    if (reply->len > 0 && parsed.ec == std::errc() && parsed.ptr == last) {
      *out = whole;
      return true;
    }
    std::string text(reply->str, reply->len);
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) {
      return false;
    }
    *out = static_cast<int64_t>(value);
    return true;
  }
  return false;
}

std::string reply_string(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    return std::string(reply->str, reply->len);
  }
  if (reply->type == REDIS_REPLY_INTEGER) {
    return std::to_string(reply->integer);
  }
  return {};
}

Status bad_reply(const char* what) {
  return Status(Code::kInternal, std::string("unexpected reply to ") + what);
}

Result<int64_t> int_reply(const Result<ReplyPtr>& reply, const char* what) {
  if (!reply.is_ok()) {
    return reply.status();
  }
  int64_t value = 0;
  if (!reply_int(reply->get(), &value)) {
    return bad_reply(what);
  }
  return value;
}

}  // namespace dq
