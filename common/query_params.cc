#include "common/query_params.h"

#include <event2/keyvalq_struct.h>

#include <cstdlib>

namespace dq {

std::string query_value(evhttp_request* request, const char* name) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
  const char* query = uri ? evhttp_uri_get_query(uri) : nullptr;
  if (query == nullptr) return {};
  evkeyvalq params{};
  if (evhttp_parse_query_str(query, &params) != 0) return {};
  const char* value = evhttp_find_header(&params, name);
  std::string result = value ? value : "";
  evhttp_clear_headers(&params);
  return result;
}

bool parse_count(const std::string& text, long* out) {
  if (text.empty()) return true;
  if (text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::strtol(text.c_str(), nullptr, 10);
  return true;
}

}  // namespace dq
