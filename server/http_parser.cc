// HttpParser (see http_parser.h).
#include "server/http_parser.h"

#include <cstring>

namespace dq {
namespace {

// A chunk-size line ("1a2b;ext=x") longer than this is refused.
constexpr size_t kMaxChunkLine = 1024;

bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool is_token(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  for (char c : text) {
    if (!is_token_char(c)) {
      return false;
    }
  }
  return true;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_text(std::string_view a, std::string_view b) {  // ASCII, any case
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// Calls each(token) for every comma-separated token of a header value.
template <typename Each>
void each_token(std::string_view value, Each each) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    each(trim(value.substr(0, comma)));
    if (comma == std::string_view::npos) {
      break;
    }
    value.remove_prefix(comma + 1);
  }
}

// Bytes a header value may hold: visible ASCII, space, tab and obs-text (>= 0x80).
bool valid_value(std::string_view value) {
  for (char c : value) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      return false;
    }
  }
  return true;
}

}  // namespace

void HttpParser::reset() {
  phase_ = Phase::kHead;
  pos_ = 0;
  started_ = false;
  seen_request_line_ = false;
  seen_length_ = false;
  chunk_left_ = 0;
  trailers_start_ = 0;
  head_ = HttpRequestHead();
  body_.clear();
  consumed_ = 0;
  error_status_ = 0;
  error_.clear();
}

HttpParse HttpParser::fail(int status, std::string message) {
  error_status_ = status;
  error_ = std::move(message);
  return HttpParse::kError;
}

bool HttpParser::next_line(std::string_view input, std::string_view* line) {
  size_t end = input.find('\n', pos_);
  if (end == std::string_view::npos) {
    return false;
  }
  *line = input.substr(pos_, end - pos_);
  if (!line->empty() && line->back() == '\r') {
    line->remove_suffix(1);
  }
  pos_ = end + 1;
  return true;
}

HttpParse HttpParser::parse(std::string_view input) {
  if (error_status_ != 0) {
    return HttpParse::kError;
  }
  if (phase_ == Phase::kDone) {
    return HttpParse::kRequest;
  }
  if (phase_ == Phase::kHead) {
    HttpParse head = parse_head(input);
    if (head != HttpParse::kRequest) {
      return head;  // kRequest here: the head is whole
    }
  }
  if (phase_ == Phase::kBody) {
    if (input.size() - pos_ < head_.content_length) {
      return HttpParse::kNeedMore;
    }
    body_.assign(input.data() + pos_, head_.content_length);
    pos_ += head_.content_length;
    phase_ = Phase::kDone;
  } else if (phase_ != Phase::kDone) {
    HttpParse chunked = parse_chunked(input);
    if (chunked != HttpParse::kRequest) {
      return chunked;
    }
  }
  consumed_ = pos_;
  return HttpParse::kRequest;
}

HttpParse HttpParser::parse_head(std::string_view input) {
  std::string_view line;
  for (;;) {
    size_t line_start = pos_;
    if (!next_line(input, &line)) {
      // Blank lines before a request line do not count (RFC 9112 2.2).
      if (input.size() > pos_) {
        started_ = true;
      }
      if (input.size() > limits_.max_head_bytes) {
        return fail(431, "the request line and headers are over " +
                             std::to_string(limits_.max_head_bytes) +
                             " bytes ([server] max_header_bytes)");
      }
      return HttpParse::kNeedMore;
    }
    if (pos_ > limits_.max_head_bytes) {
      return fail(431, "the request line and headers are over " +
                           std::to_string(limits_.max_head_bytes) +
                           " bytes ([server] max_header_bytes)");
    }
    if (!seen_request_line_) {
      if (line.empty()) {
        continue;
      }
      started_ = true;
      if (!request_line(line)) {
        return HttpParse::kError;
      }
      seen_request_line_ = true;
      continue;
    }
    if (line.empty()) {
      return head_finished();
    }
    if (line.front() == ' ' || line.front() == '\t') {
      pos_ = line_start;
      return fail(400, "header lines folded over several lines are not accepted");
    }
    if (!header_line(line)) {
      return HttpParse::kError;
    }
  }
}

bool HttpParser::request_line(std::string_view line) {
  size_t first = line.find(' ');
  size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last) {
    fail(400, "not an HTTP request line (expected METHOD TARGET HTTP/1.1)");
    return false;
  }
  std::string_view method = line.substr(0, first);
  std::string_view target = line.substr(first + 1, last - first - 1);
  std::string_view version = line.substr(last + 1);
  if (!is_token(method)) {
    fail(400, "not an HTTP request line (the method is not a token)");
    return false;
  }
  if (target.empty() || target.find(' ') != std::string_view::npos) {
    fail(400, "not an HTTP request line (the target must be one word)");
    return false;
  }
  for (char c : target) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) {
      fail(400, "the request target holds a byte that must be percent-encoded");
      return false;
    }
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    fail(400, "not an HTTP request line (expected HTTP/1.0 or HTTP/1.1 at its end)");
    return false;
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    fail(505, "HTTP version " + std::string(version.substr(5)) + " is not supported; use 1.1");
    return false;
  }
  head_.method.assign(method);
  head_.target.assign(target);
  head_.minor_version = version[7] - '0';
  head_.keep_alive = head_.minor_version == 1;
  return true;
}

bool HttpParser::header_line(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
    fail(400, "a header line is not 'Name: value'");
    return false;
  }
  std::string_view name = line.substr(0, colon);
  std::string_view value = trim(line.substr(colon + 1));
  if (!valid_value(value)) {
    fail(400, "a header value holds a control character");
    return false;
  }
  if (same_text(name, "Content-Length")) {
    if (value.empty() || value.size() > 18 ||
        value.find_first_not_of("0123456789") != std::string_view::npos) {
      fail(400, "Content-Length is not a whole number");
      return false;
    }
    size_t length = std::stoull(std::string(value));
    if (seen_length_ && length != head_.content_length) {
      fail(400, "two Content-Length headers disagree");
      return false;
    }
    seen_length_ = true;
    head_.content_length = length;
  } else if (same_text(name, "Transfer-Encoding")) {
    bool ok = true;
    int codings = 0;
    each_token(value, [&](std::string_view coding) {
      ++codings;
      ok = ok && same_text(coding, "chunked");
    });
    if (!ok || codings != 1 || head_.chunked) {
      fail(501, "Transfer-Encoding '" + std::string(value) + "' is not supported; use chunked");
      return false;
    }
    head_.chunked = true;
  } else if (same_text(name, "Connection")) {
    each_token(value, [&](std::string_view option) {
      if (same_text(option, "close")) {
        head_.keep_alive = false;
      }
      if (same_text(option, "keep-alive") && head_.minor_version == 0) {
        head_.keep_alive = true;
      }
    });
  } else if (same_text(name, "Expect")) {
    head_.expect_continue = head_.minor_version == 1 && same_text(value, "100-continue");
  } else if (same_text(name, "Authorization")) {
    head_.authorization.assign(value);
  } else if (same_text(name, "Content-Type")) {
    head_.content_type.assign(value);
  } else if (same_text(name, "Host")) {
    head_.host.assign(value);
  } else if (same_text(name, "If-Match")) {
    head_.if_match.assign(value);
  } else if (same_text(name, "If-None-Match")) {
    head_.if_none_match.assign(value);
  }
  return true;
}

HttpParse HttpParser::head_finished() {
  if (head_.chunked && seen_length_) {
    return fail(400, "a request has Content-Length or Transfer-Encoding, not both");
  }
  if (head_.chunked && head_.minor_version == 0) {
    return fail(400, "Transfer-Encoding is not allowed in HTTP/1.0");
  }
  if (head_.content_length > limits_.max_body_bytes) {
    return fail(413, "a request body is at most " + std::to_string(limits_.max_body_bytes) +
                         " bytes ([server] max_request_bytes); this one has " +
                         std::to_string(head_.content_length));
  }
  phase_ = head_.chunked ? Phase::kChunkSize : Phase::kBody;
  return HttpParse::kRequest;
}

HttpParse HttpParser::parse_chunked(std::string_view input) {
  std::string_view line;
  for (;;) {
    switch (phase_) {
      case Phase::kChunkSize: {
        if (!next_line(input, &line)) {
          if (input.size() - pos_ > kMaxChunkLine) {
            return fail(400, "a chunk size line is too long");
          }
          return HttpParse::kNeedMore;
        }
        std::string_view size = trim(line.substr(0, line.find(';')));
        if (size.empty() || size.size() > 15 ||
            size.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
          return fail(400, "a chunk size is not a hexadecimal number");
        }
        chunk_left_ = std::stoull(std::string(size), nullptr, 16);
        if (chunk_left_ > limits_.max_body_bytes - body_.size()) {
          return fail(413, "a request body is at most " + std::to_string(limits_.max_body_bytes) +
                               " bytes ([server] max_request_bytes)");
        }
        phase_ = chunk_left_ == 0 ? Phase::kTrailers : Phase::kChunkData;
        trailers_start_ = pos_;
        break;
      }
      case Phase::kChunkData: {
        size_t here = std::min(chunk_left_, input.size() - pos_);
        body_.append(input.data() + pos_, here);
        pos_ += here;
        chunk_left_ -= here;
        if (chunk_left_ > 0) {
          return HttpParse::kNeedMore;
        }
        phase_ = Phase::kChunkDataEnd;
        break;
      }
      case Phase::kChunkDataEnd: {
        if (input.size() - pos_ < 2) {
          if (input.size() > pos_ && input[pos_] != '\r' && input[pos_] != '\n') {
            return fail(400, "a chunk does not end with CR LF");
          }
          if (input.size() - pos_ == 1 && input[pos_] == '\n') {
            ++pos_;
            phase_ = Phase::kChunkSize;
            break;
          }
          return HttpParse::kNeedMore;
        }
        if (input.compare(pos_, 2, "\r\n") == 0) {
          pos_ += 2;
        } else if (input[pos_] == '\n') {
          pos_ += 1;
        } else {
          return fail(400, "a chunk does not end with CR LF");
        }
        phase_ = Phase::kChunkSize;
        break;
      }
      case Phase::kTrailers: {
        bool whole = next_line(input, &line);
        // The same limit as the head's, whole lines or not (found by fuzz_http_parser).
        if ((whole ? pos_ : input.size()) - trailers_start_ > limits_.max_head_bytes) {
          return fail(431, "the trailer fields are over " + std::to_string(limits_.max_head_bytes) +
                               " bytes ([server] max_header_bytes)");
        }
        if (!whole) {
          return HttpParse::kNeedMore;
        }
        if (line.empty()) {
          phase_ = Phase::kDone;
          return HttpParse::kRequest;
        }
        // Trailer fields are read past, not used.
        if (line.find(':') == std::string_view::npos) {
          return fail(400, "a trailer is not 'Name: value'");
        }
        break;
      }
      default:
        return HttpParse::kRequest;
    }
  }
}

}  // namespace dq
