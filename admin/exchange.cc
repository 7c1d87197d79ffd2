// Implements admin/exchange.h.
#include "admin/exchange.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include <cstdlib>

#include "common/core/event_handles.h"
#include "common/core/http_status.h"
#include "common/core/log.h"
#include "common/http/http_request.h"

namespace dq {

Exchange::Exchange(evhttp_request* request)
    : request_(request), method_(method_name(evhttp_request_get_command(request))) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
  path_ = path_parts(uri ? evhttp_uri_get_path(uri) : nullptr);
  body_ = request_body(request);
}

std::string Exchange::query(const char* name) const { return query_value(request_, name); }

std::string Exchange::header(const char* name) const {
  const char* value = evhttp_find_header(evhttp_request_get_input_headers(request_), name);
  return value ? value : "";
}

std::string Exchange::cookie(const std::string& name) const {
  std::string cookies = header("Cookie");
  size_t start = 0;
  while (start < cookies.size()) {
    size_t end = cookies.find(';', start);
    if (end == std::string::npos) {
      end = cookies.size();
    }
    std::string pair = cookies.substr(start, end - start);
    pair.erase(0, pair.find_first_not_of(' '));
    size_t equals = pair.find('=');
    if (equals != std::string::npos && pair.compare(0, equals, name) == 0 &&
        equals == name.size()) {
      return pair.substr(equals + 1);
    }
    start = end + 1;
  }
  return {};
}

std::string Exchange::peer_ip() const {
  evhttp_connection* connection = evhttp_request_get_connection(request_);
  char* address = nullptr;
  ev_uint16_t port = 0;
  if (connection) {
    evhttp_connection_get_peer(connection, &address, &port);
  }
  return address ? address : "";
}

bool Exchange::over_https() const { return header("X-Forwarded-Proto") == "https"; }

Result<Json> Exchange::json_object() const {
  Json parsed = Json::parse(body_, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status(Code::kInvalid, "the body must be a JSON object");
  }
  return parsed;
}

Result<int64_t> Exchange::query_int(const char* name, int64_t fallback, int64_t min,
                                    int64_t max) const {
  std::string text = query(name);
  if (text.empty()) {
    return fallback;
  }
  if (text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(text) < min || std::stoll(text) > max) {
    return Status(Code::kInvalid, std::string(name) + " must be an integer from " +
                                      std::to_string(min) + " to " + std::to_string(max));
  }
  return std::stoll(text);
}

bool Exchange::page(int64_t* offset, int64_t* limit) {
  auto from = query_int("offset", 0, 0, 1000000000);
  auto most = query_int("limit", 50, 1, 500);
  if (!from.is_ok() || !most.is_ok()) {
    reply_error(from.is_ok() ? most.status() : from.status());
    return false;
  }
  *offset = *from;
  *limit = *most;
  return true;
}

void Exchange::set_header(const char* name, const std::string& value) {
  evhttp_add_header(evhttp_request_get_output_headers(request_), name, value.c_str());
}

void Exchange::reply(int status, const std::string& content_type, const std::string& bytes) {
  if (status_ != 0) {
    return;  // answered already
  }
  status_ = status;
  evkeyvalq* headers = evhttp_request_get_output_headers(request_);
  evhttp_add_header(headers, "Content-Type", content_type.c_str());
  evhttp_add_header(headers, "Content-Security-Policy", "default-src 'self'");
  evhttp_add_header(headers, "X-Frame-Options", "DENY");
  evhttp_add_header(headers, "X-Content-Type-Options", "nosniff");
  evhttp_add_header(headers, "Referrer-Policy", "no-referrer");
  evhttp_add_header(headers, "Cache-Control", "no-store");
  UniqueEvbuffer out(evbuffer_new());
  evbuffer_add(out.get(), bytes.data(), bytes.size());
  request_log().info("admin {} {} {}", peer_ip(), method_, status);
  evhttp_send_reply(request_, status, nullptr, out.get());
}

void Exchange::reply_json(int status, const Json& body) {
  reply(status, "application/json", body.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void Exchange::reply_error(const Status& status) {
  reply_error(http_status_of(status.code()), status.message());
}

void Exchange::reply_error(int http_status, const std::string& message) {
  reply_json(http_status, Json{{"error", message}});
}

void Exchange::redirect(const std::string& location) {
  set_header("Location", location);
  reply(302, "text/plain; charset=utf-8", "see " + location + "\n");
}

}  // namespace dq
