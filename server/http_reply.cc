// Answer bytes (see http_reply.h).
#include "server/http_reply.h"

#include <time.h>

#include <charconv>

namespace dq {

const char* reason_of(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 400 ? "OK" : "Error";
  }
}

std::string dump_json(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string_view http_date() {
  // One server process has one thread: a static cache is enough.
  static time_t formatted_at = 0;
  static char text[64];
  static size_t length = 0;
  time_t now = time(nullptr);
  if (now != formatted_at) {
    tm utc{};
    gmtime_r(&now, &utc);
    length = strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc);
    formatted_at = now;
  }
  return std::string_view(text, length);
}

namespace {

template <typename Number>
void append_number(std::string* out, Number value) {
  char text[24];
  auto end = std::to_chars(text, text + sizeof text, value).ptr;
  out->append(text, static_cast<size_t>(end - text));
}

}  // namespace

void append_reply(std::string* out, const ReplyHead& head, std::string_view body) {
  out->append("HTTP/1.1 ");
  append_number(out, head.status);
  out->push_back(' ');
  out->append(reason_of(head.status));
  out->append("\r\nDate: ");
  out->append(http_date());
  if (head.status != 204) {
    out->append("\r\nContent-Type: ");
    out->append(head.content_type);
    out->append("\r\nContent-Length: ");
    append_number(out, body.size() + head.body_suffix.size());
  }
  if (head.close) {
    out->append("\r\nConnection: close");
  } else if (head.keep_alive_header) {
    out->append("\r\nConnection: keep-alive");
  }
  out->append("\r\n");
  out->append(head.extra_headers);
  out->append("\r\n");
  if (!head.head_only && head.status != 204) {
    out->append(body);
    out->append(head.body_suffix);
  }
}

}  // namespace dq
