// HttpExchange (see http_exchange.h).
#include "server/http_exchange.h"

#include "server/http_connection.h"
#include "server/http_reply.h"

namespace dq {

HttpExchange::HttpExchange(HttpRequestHead head, std::string body, HttpConnection* connection,
                           std::string refusal)
    : head_(std::move(head)),
      body_(std::move(body)),
      connection_(connection),
      refusal_(std::move(refusal)),
      started_(std::chrono::steady_clock::now()) {}

std::string_view HttpExchange::path() const {
  std::string_view target = head_.target;
  // absolute-form ("http://host/path"): the path starts after the authority
  size_t scheme = target.find("://");
  if (scheme != std::string_view::npos && scheme < target.find('/')) {
    size_t slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  target = target.substr(0, target.find_first_of("?#"));
  return target.empty() ? std::string_view("/") : target;
}

std::string_view HttpExchange::query() const {
  std::string_view target = head_.target;
  size_t mark = target.find('?');
  if (mark == std::string_view::npos) {
    return {};
  }
  target.remove_prefix(mark + 1);
  return target.substr(0, target.find('#'));
}

void HttpExchange::add_header(std::string_view name, std::string_view value) {
  extra_headers_.append(name);
  extra_headers_.append(": ");
  extra_headers_.append(value);
  extra_headers_.append("\r\n");
}

void HttpExchange::answer(int status, std::string_view content_type, std::string_view body,
                          std::string_view body_suffix) {
  if (answered_) {
    return;
  }
  answered_ = true;
  if (connection_ == nullptr) {
    return;  // the client went away
  }
  ReplyHead reply;
  reply.status = status;
  reply.content_type = content_type;
  closes_ = connection_->closes_after(*this);
  reply.close = closes_;
  reply.keep_alive_header = !closes_ && head_.minor_version == 0;
  reply.extra_headers = extra_headers_;
  reply.head_only = head_.method == "HEAD";
  reply.body_suffix = body_suffix;
  reply_.reserve(160 + extra_headers_.size() + body.size() + body_suffix.size());
  append_reply(&reply_, reply, body);
  connection_->exchange_answered();  // may write it, and may close (delete) the connection
}

bool HttpExchange::peer_gone() const {
  return connection_ == nullptr || connection_->peer_closed();
}

}  // namespace dq
