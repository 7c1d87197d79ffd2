// The pointer and length arrays hiredis' *CommandArgv functions take, built
// from (and borrowing) a vector of strings, so binary-safe arguments need no copy.
#pragma once

#include <string>
#include <vector>

namespace dq {

class RedisArgv {
 public:
  // `argv` must outlive this object: the pointers point into its strings.
  explicit RedisArgv(const std::vector<std::string>& argv) {
    pointers_.reserve(argv.size());
    lengths_.reserve(argv.size());
    for (const auto& arg : argv) {
      pointers_.push_back(arg.data());
      lengths_.push_back(arg.size());
    }
  }

  int count() const { return static_cast<int>(pointers_.size()); }
  const char** pointers() { return pointers_.data(); }
  const size_t* lengths() const { return lengths_.data(); }

 private:
  std::vector<const char*> pointers_;
  std::vector<size_t> lengths_;
};

// The command in Redis's wire format (RESP: "*<n>\r\n" then "$<len>\r\n<arg>\r\n"
// per argument), for redisAsyncFormattedCommand. Written into one buffer of
// the exact size: hiredis' own formatting (sdscatfmt) spent ~11,000
// instructions on an add's sixteen arguments, and string appends ~6,000.
inline std::string resp_command(const std::vector<std::string>& argv) {
  auto digits = [](size_t n) {
    size_t count = 1;
    while (n >= 10) {
      n /= 10;
      ++count;
    }
    return count;
  };
  size_t size = 3 + digits(argv.size());
  for (const auto& arg : argv) {
    size += 5 + digits(arg.size()) + arg.size();
  }
  std::string out(size, '\0');
  char* at = out.data();
  auto put_line = [&](char kind, size_t n) {
    *at++ = kind;
    size_t width = digits(n);
    for (size_t i = width; i > 0; --i, n /= 10) {
      at[i - 1] = static_cast<char>('0' + n % 10);
    }
    at += width;
    *at++ = '\r';
    *at++ = '\n';
  };
  put_line('*', argv.size());
  for (const auto& arg : argv) {
    put_line('$', arg.size());
    at += arg.copy(at, arg.size());  // binary-safe, no terminator: "\r\n" follows
    *at++ = '\r';
    *at++ = '\n';
  }
  return out;
}

}  // namespace dq
