// Builds the HTTP request of one callback from a topic and a reserved job.
#include "consumer/callback_request.h"

#include "common/json.h"
#include "common/json_span.h"

namespace dq {

std::string url_encode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string callback_json(const Job& job) {
  std::string out;
  out.reserve(job.body.size() + job.topic.size() + job.id.size() + 128);
  out += "{\"topic\":";
  out += Json(job.topic).dump();
  out += ",\"id\":";
  out += Json(job.id).dump();
  out += ",\"body\":";
  out += embeddable_json(job.body);  // byte for byte as the producer sent it
  out += ",\"attempt\":" + std::to_string(job.attempts);
  out += ",\"due_at_ms\":" + std::to_string(job.due_at_ms);
  out += ",\"created_at_ms\":" + std::to_string(job.created_at_ms);
  out += "}";
  return out;
}

CallbackRequest build_callback_request(const Topic& topic, const Job& job) {
  CallbackRequest request;
  request.post = topic.method != "GET";
  request.headers = {"X-DQ-Topic: " + job.topic, "X-DQ-Id: " + job.id,
                     "X-DQ-Attempt: " + std::to_string(job.attempts), "Expect:"};
  if (request.post) {
    request.url = topic.callback_url;
    request.body = callback_json(job);
    request.headers.push_back("Content-Type: application/json");
    return request;
  }
  std::string query = "topic=" + url_encode(job.topic) + "&id=" + url_encode(job.id) +
                      "&body=" + url_encode(embeddable_json(job.body)) +
                      "&attempt=" + std::to_string(job.attempts) +
                      "&due_at_ms=" + std::to_string(job.due_at_ms) +
                      "&created_at_ms=" + std::to_string(job.created_at_ms);
  const std::string& base = topic.callback_url;
  size_t hash = base.find('#');
  std::string without_fragment = hash == std::string::npos ? base : base.substr(0, hash);
  char joiner = without_fragment.find('?') == std::string::npos ? '?' : '&';
  if (!without_fragment.empty() &&
      (without_fragment.back() == '?' || without_fragment.back() == '&')) {
    joiner = 0;
  }
  request.url = without_fragment;
  if (joiner) request.url.push_back(joiner);
  request.url += query;
  return request;
}

}  // namespace dq
