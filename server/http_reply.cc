#include "server/http_reply.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

namespace dq {
namespace {

const char* reason_of(int status) {
  switch (status) {
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
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return status < 400 ? "OK" : "Error";
  }
}

}  // namespace

void reply_text(evhttp_request* request, int status, const std::string& content_type,
                const std::string& text) {
  evkeyvalq* headers = evhttp_request_get_output_headers(request);
  evhttp_add_header(headers, "Content-Type", content_type.c_str());
  if (status == 204) {
    evhttp_send_reply(request, status, reason_of(status), nullptr);
    return;
  }
  evbuffer* buffer = evbuffer_new();
  evbuffer_add(buffer, text.data(), text.size());
  evhttp_send_reply(request, status, reason_of(status), buffer);
  evbuffer_free(buffer);
}

std::string dump_json(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void reply_json_text(evhttp_request* request, int status, const std::string& json_text) {
  reply_text(request, status, "application/json", status == 204 ? std::string() : json_text + "\n");
}

void reply_json(evhttp_request* request, int status, const Json& body) {
  reply_json_text(request, status, status == 204 ? std::string() : dump_json(body));
}

void reply_error(evhttp_request* request, int status, const std::string& message) {
  reply_json(request, status, Json{{"error", message}});
}

void reply_status(evhttp_request* request, const Status& status) {
  reply_error(request, http_status_of(status.code()), status.message());
}

}  // namespace dq
