// A descriptor with one owner that closes itself: move-only, closed when its owner goes (or on reset()).
#pragma once

#include <unistd.h>

#include <utility>

namespace akts {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  // Gives the descriptor up without closing it (its new owner closes it).
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  // Closes the one held (if any) and holds `fd`. A close is never retried: on Linux the descriptor is gone
  // whatever close() returns, and a retry could close one another thread just opened.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace akts
