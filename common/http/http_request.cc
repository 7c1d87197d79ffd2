// Implements common/http/http_request.h.
#include "common/http/http_request.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include <cstdlib>

namespace dq {

const char* method_name(evhttp_cmd_type method) {
  switch (method) {
    case EVHTTP_REQ_GET:
      return "GET";
    case EVHTTP_REQ_POST:
      return "POST";
    case EVHTTP_REQ_DELETE:
      return "DELETE";
    case EVHTTP_REQ_PUT:
      return "PUT";
    case EVHTTP_REQ_HEAD:
      return "HEAD";
    default:
      return "OTHER";
  }
}

std::vector<std::string> path_parts(const char* path) {
  return path_parts(std::string_view(path == nullptr ? "" : path));
}

std::vector<std::string> path_parts(std::string_view text) {
  std::vector<std::string> parts;
  parts.reserve(6);  // /v1/topics/{topic}/jobs/{id} and the like: one allocation
  size_t start = 0;
  while (start <= text.size()) {
    size_t slash = text.find('/', start);
    if (slash == std::string_view::npos) {
      slash = text.size();
    }
    std::string_view piece = text.substr(start, slash - start);
    if (!piece.empty() && piece.find('%') == std::string_view::npos) {
      parts.emplace_back(piece);  // nothing to decode
    } else if (!piece.empty()) {
      std::string part(piece);
      size_t length = 0;
      char* decoded = evhttp_uridecode(part.c_str(), 0, &length);
      parts.emplace_back(decoded ? std::string(decoded, length) : part);
      free(decoded);
    }
    start = slash + 1;
  }
  return parts;
}

std::string request_body(evhttp_request* request) {
  evbuffer* input = evhttp_request_get_input_buffer(request);
  size_t length = evbuffer_get_length(input);
  std::string body(length, '\0');
  if (length > 0) {
    evbuffer_copyout(input, body.data(), length);
  }
  return body;
}

std::string query_value(evhttp_request* request, const char* name) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
  const char* query = uri ? evhttp_uri_get_query(uri) : nullptr;
  if (query == nullptr) {
    return {};
  }
  return query_value(std::string(query), name);
}

std::string query_value(const std::string& query, const char* name) {
  evkeyvalq params{};
  if (evhttp_parse_query_str(query.c_str(), &params) != 0) {
    return {};
  }
  const char* value = evhttp_find_header(&params, name);
  std::string result = value ? value : "";
  evhttp_clear_headers(&params);
  return result;
}

bool parse_count(const std::string& text, long* out) {
  if (text.empty()) {
    return true;
  }
  if (text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::strtol(text.c_str(), nullptr, 10);
  return true;
}

}  // namespace dq
