// Status and Result<T>: how an operation that can fail in several ways says
// which way it failed. Callers must look at them ([[nodiscard]]).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace dq {

enum class Code {
  kOk = 0,
  kInvalid,      // bad input from a caller (400)
  kNotFound,     // unknown topic or job (404)
  kConflict,     // id already pending (409)
  kTooLarge,     // body over the limit (413)
  kUnavailable,  // no shard can take it / Redis down (503)
  kTimeout,      // an operation ran out of time
  kUnknown,      // a write was sent but no answer came: it may or may not have run (504)
  kInternal,     // a bug or an unexpected answer
};

const char* code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace dq
