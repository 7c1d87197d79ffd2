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

}  // namespace dq
