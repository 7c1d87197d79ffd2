// Builds the HTTP request of one callback from a topic and a reserved job.
#include "consumer/callback_request.h"

#include <charconv>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/core/json_check.h"
#include "common/core/json_span.h"
#include "common/http/php_fields.h"
#include "common/http/webhook_signature.h"

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

namespace {

void append_number(std::string& out, int64_t value) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
  out.append(digits, end);
}

}  // namespace

void append_callback_json(const Job& job, std::string* out) {
  out->reserve(out->size() + job.body.size() + job.topic.size() + job.id.size() + 128);
  *out += "{\"topic\":";
  append_json_string(out, job.topic);
  *out += ",\"id\":";
  append_json_string(out, job.id);
  *out += ",\"body\":";
  // Byte for byte as the producer sent it; a body that is not JSON (an old
  // record or an import) goes as a JSON string, as embeddable_json makes it.
  if (plainly_json(job.body)) {
    *out += job.body;
  } else {
    *out += embeddable_json(job.body);
  }
  *out += ",\"attempt\":";
  append_number(*out, job.attempts);
  *out += ",\"due_at_ms\":";
  append_number(*out, job.due_at_ms);
  *out += ",\"created_at_ms\":";
  append_number(*out, job.created_at_ms);
  *out += "}";
}

std::string callback_json(const Job& job) {
  std::string out;
  append_callback_json(job, &out);
  return out;
}

namespace {

// `base` without its fragment, with `query` appended after '?' or '&'.
std::string with_query(const std::string& base, const std::string& query) {
  size_t hash = base.find('#');
  std::string url = hash == std::string::npos ? base : base.substr(0, hash);
  if (url.find('?') == std::string::npos) {
    url.push_back('?');
  } else if (!url.empty() && url.back() != '?' && url.back() != '&') {
    url.push_back('&');
  }
  return url + query;
}

// A field's value as the PHP queue's curl wrapper sent it: a string as its
// text, a number as written, true as "1", false and null as "", an object or
// array as its JSON text (PHP sent the useless word "Array").
std::string form_value(const std::string& json) {
  if (json == "true") {
    return "1";
  }
  if (json == "false" || json == "null") {
    return "";
  }
  if (!json.empty() && json[0] == '"') {
    Json text = Json::parse(json, nullptr, false);
    if (text.is_string()) {
      return text.get<std::string>();
    }
  }
  return json;
}

}  // namespace

std::string callback_form(const Job& job) {
  int failed = job.attempts > 1 ? job.attempts - 1 : 0;
  auto fields = php_fields(job.body, job.due_at_ms, job.created_at_ms, failed);
  if (!fields) {
    // Not an object: the body goes whole as one field beside the PHP ones.
    fields = php_fields("null", job.due_at_ms, job.created_at_ms, failed);
    fields->insert(fields->begin(), PhpField{"body", embeddable_json(job.body)});
  }
  std::string out;
  for (const PhpField& field : *fields) {
    if (!out.empty()) {
      out.push_back('&');
    }
    out += url_encode(field.name) + "=" + url_encode(form_value(field.json));
  }
  return out;
}

namespace {

void build_unsigned_request(const Topic& topic, const Job& job, CallbackRequest* request) {
  request->post = topic.method != "GET";
  bool form = topic.callback_format == "form";
  // assign() into the strings a pooled request already holds keeps their buffers.
  std::vector<std::string>& headers = request->headers;
  headers.resize(request->post ? 5 : 4);
  headers[0].assign("X-DQ-Topic: ").append(job.topic);
  headers[1].assign("X-DQ-Id: ").append(job.id);
  headers[2].assign("X-DQ-Attempt: ");
  append_number(headers[2], job.attempts);
  headers[3].assign("Expect:");
  if (request->post) {
    headers[4].assign(form ? "Content-Type: application/x-www-form-urlencoded"
                           : "Content-Type: application/json");
  }
  request->body.clear();
  if (form) {
    std::string fields = callback_form(job);
    if (request->post) {
      request->url.assign(topic.callback_url);
      request->body = std::move(fields);
    } else {
      request->url = with_query(topic.callback_url, fields);
    }
    return;
  }
  if (request->post) {
    request->url.assign(topic.callback_url);
    append_callback_json(job, &request->body);
    return;
  }
  std::string query = "topic=" + url_encode(job.topic) + "&id=" + url_encode(job.id) +
                      "&body=" + url_encode(embeddable_json(job.body)) +
                      "&attempt=" + std::to_string(job.attempts) +
                      "&due_at_ms=" + std::to_string(job.due_at_ms) +
                      "&created_at_ms=" + std::to_string(job.created_at_ms);
  request->url = with_query(topic.callback_url, query);
}

}  // namespace

void build_callback_request(const Topic& topic, const Job& job, CallbackRequest* request) {
  build_unsigned_request(topic, job, request);
  // Signed as sent: a GET carries no body (and validate_topic refuses keys on one).
  append_webhook_headers(topic, job, now_ms(), request->post ? request->body : std::string(),
                         &request->headers);
}

}  // namespace dq
