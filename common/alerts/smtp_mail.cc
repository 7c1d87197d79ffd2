// Implements SMTP sending with libcurl (see smtp_mail.h).
#include "common/alerts/smtp_mail.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "common/core/text_list.h"
#include "common/http/curl_handle.h"

namespace dq {
namespace {

std::string one_line(const std::string& text) {
  std::string line = text;
  std::replace(line.begin(), line.end(), '\r', ' ');
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

bool is_ascii(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::string base64(const std::string& data) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t n = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8) |
                 static_cast<unsigned char>(data[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < data.size()) {
    uint32_t n = static_cast<unsigned char>(data[i]) << 16;
    if (i + 1 < data.size()) {
      n |= static_cast<unsigned char>(data[i + 1]) << 8;
    }
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < data.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// RFC 2047 encoded word for a non-ASCII subject.
std::string header_text(const std::string& text) {
  std::string line = one_line(text);
  if (is_ascii(line)) {
    return line;
  }
  return "=?UTF-8?B?" + base64(line) + "?=";
}

// Body lines end in CRLF; lines over 998 bytes are cut (RFC 5322 limit).
std::string crlf_body(const std::string& text) {
  std::string body;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.size() > 998) {
      line.resize(998);
    }
    body += line + "\r\n";
    start = end + 1;
  }
  return body;
}

struct Upload {
  std::string data;
  size_t sent = 0;
};

size_t read_upload(char* buffer, size_t size, size_t count, void* user) {
  auto* upload = static_cast<Upload*>(user);
  size_t room = size * count;
  size_t left = upload->data.size() - upload->sent;
  size_t n = std::min(room, left);
  std::memcpy(buffer, upload->data.data() + upload->sent, n);
  upload->sent += n;
  return n;
}

// The server's replies arrive as "headers"; keep the last one.
size_t keep_reply(char* data, size_t size, size_t count, void* user) {
  auto* last = static_cast<std::string*>(user);
  std::string line(data, size * count);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.pop_back();
  }
  if (!line.empty()) {
    *last = line;
  }
  return size * count;
}

}  // namespace

std::vector<std::string> split_addresses(const std::string& text) {
  std::vector<std::string> out;
  for (std::string& item : split_list(text)) {
    if (std::find(out.begin(), out.end(), item) == out.end()) {
      out.push_back(std::move(item));
    }
  }
  return out;
}

std::string format_mail(const std::string& from, const OutgoingMail& mail, int64_t now_ms) {
  time_t seconds = static_cast<time_t>(now_ms / 1000);
  struct tm local {};
  localtime_r(&seconds, &local);
  char date[64];
  std::strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S %z", &local);
  std::string to;
  for (const auto& address : mail.to) {
    to += (to.empty() ? "" : ", ") + one_line(address);
  }
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  std::string message_id = "<" + std::to_string(now_ms) + "." + std::to_string(getpid()) + "." +
                           std::to_string(reinterpret_cast<uintptr_t>(&mail) & 0xffff) + "@dq." +
                           one_line(host) + ">";
  return std::string("Date: ") + date + "\r\nFrom: " + one_line(from) + "\r\nTo: " + to +
         "\r\nSubject: " + header_text(mail.subject) + "\r\nMessage-ID: " + message_id +
         "\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=UTF-8\r\n"
         "Content-Transfer-Encoding: 8bit\r\nX-Mailer: dq\r\n\r\n" +
         crlf_body(mail.text);
}

Result<std::string> send_mail(const AlertSettings& settings, const OutgoingMail& mail,
                              int timeout_ms) {
  if (!settings.mail_on()) {
    return Status(Code::kInvalid, "no SMTP host is set (smtp_host)");
  }
  if (mail.to.empty()) {
    return Status(Code::kInvalid, "the mail has no recipient");
  }
  CurlEasy easy(curl_easy_init());
  if (!easy) {
    return Status(Code::kInternal, "curl_easy_init failed");
  }
  std::string scheme = settings.smtp_security == "tls" ? "smtps://" : "smtp://";
  std::string url = scheme + settings.smtp_host + ":" + std::to_string(settings.smtp_port);
  Upload upload;
  upload.data = format_mail(settings.mail_from, mail, static_cast<int64_t>(time(nullptr)) * 1000);
  CurlSlist recipients;
  for (const auto& address : mail.to) {
    std::string bracketed = "<" + one_line(address) + ">";
    append_header(recipients, bracketed.c_str());
  }
  std::string from = "<" + one_line(settings.mail_from) + ">";
  std::string last_reply;
  char error[CURL_ERROR_SIZE] = "";
  CURL* handle = easy.get();
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_MAIL_FROM, from.c_str());
  curl_easy_setopt(handle, CURLOPT_MAIL_RCPT, recipients.get());
  curl_easy_setopt(handle, CURLOPT_READFUNCTION, read_upload);
  curl_easy_setopt(handle, CURLOPT_READDATA, &upload);
  curl_easy_setopt(handle, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, keep_reply);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &last_reply);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  if (settings.smtp_security == "starttls") {
    curl_easy_setopt(handle, CURLOPT_USE_SSL, CURLUSESSL_ALL);
  }
  if (!settings.smtp_user.empty()) {
    curl_easy_setopt(handle, CURLOPT_USERNAME, settings.smtp_user.c_str());
    curl_easy_setopt(handle, CURLOPT_PASSWORD, settings.smtp_password.c_str());
  }
  CURLcode rc = curl_easy_perform(handle);
  long code = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
  if (rc != CURLE_OK) {
    std::string why = error[0] != '\0' ? error : curl_easy_strerror(rc);
    if (!last_reply.empty()) {
      why += " (server said: " + last_reply + ")";
    }
    return Status(Code::kUnavailable, "SMTP " + url + ": " + why);
  }
  if (last_reply.empty()) {
    last_reply = std::to_string(code);
  }
  return last_reply;
}

}  // namespace dq
