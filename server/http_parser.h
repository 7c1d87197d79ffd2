// HttpParser: an incremental HTTP/1.0 and 1.1 request parser, pure (no I/O).
// It is given all the bytes of a connection received and not yet consumed,
// the same bytes as at its previous call plus any that arrived since, and
// resumes where it stopped: the head line by line, then a Content-Length
// body or a `Transfer-Encoding: chunked` one (decoded as it arrives). A
// finished request says how many bytes it took; reset() before the next.
// Errors carry the HTTP status and the message dq answers with: 400 for
// anything malformed, 431 for a head over max_head_bytes, 413 for a body over
// max_body_bytes (known from Content-Length before any body arrives), 501 for
// a transfer coding other than chunked, 505 for a version other than 1.0/1.1.
// After an error the connection cannot be resynchronised: answer and close.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dq {

struct HttpLimits {
  size_t max_head_bytes = size_t{64} * 1024;  // request line and headers
  size_t max_body_bytes = size_t{16} * 1024 * 1024;
};

// The parts of a request the API uses. Header values are copied out (most
// fit std::string's inline storage); headers the API does not read are
// checked for syntax and skipped.
struct HttpRequestHead {
  std::string method;  // as sent: "GET", "POST", ...
  std::string target;  // as sent: "/v1/topics/a/jobs?x=1"
  int minor_version = 1;
  bool keep_alive = true;        // after HTTP/1.x's rules and the Connection header
  bool expect_continue = false;  // "Expect: 100-continue" on HTTP/1.1
  bool chunked = false;
  size_t content_length = 0;
  std::string authorization;
  std::string content_type;
  std::string host;
  std::string if_match;       // a topic write's version: "3" or 3
  std::string if_none_match;  // "*": a PUT that only creates
};

enum class HttpParse { kNeedMore, kRequest, kError };

class HttpParser {
 public:
  explicit HttpParser(HttpLimits limits) : limits_(limits) {}

  // Goes on parsing `input` (see the top of the file).
  HttpParse parse(std::string_view input);
  // The head is whole (valid once parse() went past it): the time for a 100 Continue.
  bool head_done() const { return phase_ > Phase::kHead; }
  const HttpRequestHead& head() const { return head_; }
  HttpRequestHead take_head() { return std::move(head_); }  // before reset()
  std::string& body() { return body_; }
  // Bytes of input the finished request took (after kRequest).
  size_t consumed() const { return consumed_; }
  // True once some byte of a request (not only blank lines) was seen.
  bool started() const { return started_; }
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }
  // Ready for the next request (its bytes start at consumed() of the old input).
  void reset();

 private:
  enum class Phase { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone };
  HttpParse fail(int status, std::string message);
  HttpParse parse_head(std::string_view input);
  HttpParse parse_chunked(std::string_view input);
  bool request_line(std::string_view line);
  bool header_line(std::string_view line);
  HttpParse head_finished();
  // Next line (without its CR LF or LF) from pos_; false: not whole yet.
  bool next_line(std::string_view input, std::string_view* line);

  HttpLimits limits_;
  Phase phase_ = Phase::kHead;
  size_t pos_ = 0;  // where parsing resumes in input
  bool started_ = false;
  bool seen_request_line_ = false;
  bool seen_length_ = false;
  size_t chunk_left_ = 0;
  size_t trailers_start_ = 0;
  HttpRequestHead head_;
  std::string body_;
  size_t consumed_ = 0;
  int error_status_ = 0;
  std::string error_;
};

}  // namespace dq
