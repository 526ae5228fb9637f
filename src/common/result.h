// Errors as values. Library code returns Result<T>; only main() decides to exit.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

namespace akts {

enum class ErrorKind {
  kInvalidArgument,  // bad input from a person, an agent or a config: nothing changed
  kSystem,           // a syscall failed; errno says why
  kLoad,             // libbpf could not open or load an object
  kVerifier,         // the kernel's verifier rejected a program
  kKernel,           // the kernel refused an operation or ejected the scheduler
  kBusy,             // another scheduler owns sched_ext
  kTimeout,
  kUnsupported,      // this kernel lacks something akts needs
};

const char* error_kind_name(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kSystem;
  int err = 0;  // errno, when there is one
  std::string message;
  std::vector<std::string> details;  // e.g. the verifier log's key lines

  std::string to_string() const;
};

inline Error make_error(ErrorKind kind, std::string message, int err = 0) {
  return Error{kind, err, std::move(message), {}};
}

template <typename... Args>
Error errorf(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  return Error{kind, 0, fmt::format(f, std::forward<Args>(args)...), {}};
}

// errno-carrying error from a libbpf/syscall return value (negative errno or -1 + errno).
Error sys_error(std::string what, int ret_or_errno);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace akts
