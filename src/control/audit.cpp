// The audit log of control actions (see audit.h).
#include "control/audit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "reasoning/decision_log.h"

namespace akts::control {

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return errorf(ErrorKind::kSystem, "audit log: cannot create {}: {}", dir.string(), ec.message());
    ::chmod(dir.c_str(), 0700);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errorf(ErrorKind::kSystem, "audit log: cannot open {}: {}", path, std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return errorf(ErrorKind::kInvalidArgument, "audit log: {} is not a regular file", path);
  }
  return std::unique_ptr<AuditLog>(new AuditLog(path, fd, static_cast<uint64_t>(st.st_size), max_bytes));
}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

void AuditLog::record(const Caller& who, std::string_view method, const nlohmann::json& params,
                      const nlohmann::json& result) noexcept {
  try {
    std::string res = result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    nlohmann::json line = {{"time", utc_now_rfc3339()},
                           {"uid", who.uid},
                           {"gid", who.gid},
                           {"pid", who.pid},
                           {"method", method},
                           {"params", params}};
    if (res.size() > kMaxResultBytes)
      line["result"] = {{"truncated", res.size()}};
    else
      line["result"] = result;
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard lk(mu_);
    if (fd_ >= 0 && size_ + text.size() > max_bytes_ && size_ > 0) {
      // Rotate: the live file moves aside first, so a crash in between loses nothing.
      if (::rename(path_.c_str(), (path_ + ".1").c_str()) == 0) {
        int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0) {
          ::close(fd_);
          fd_ = fd;
          size_ = 0;
        }
      }
    }
    ssize_t n = fd_ >= 0 ? ::write(fd_, text.data(), text.size()) : -1;
    if (n == static_cast<ssize_t>(text.size())) {
      size_ += text.size();
      ++records_;
    } else if (errors_++ == 0) {
      spdlog::error("audit log {}: a record could not be written ({}); the change itself stands", path_,
                    n < 0 ? std::strerror(errno) : "short write");
    }
  } catch (...) {
    std::lock_guard lk(mu_);
    ++errors_;
  }
}

uint64_t AuditLog::records() const {
  std::lock_guard lk(mu_);
  return records_;
}

uint64_t AuditLog::write_errors() const {
  std::lock_guard lk(mu_);
  return errors_;
}

const std::set<std::string, std::less<>>& audited_methods() {
  static const std::set<std::string, std::less<>> m = {"v1.switch",  "v1.classify", "v1.unclassify", "v1.hold",
                                                       "v1.release", "v1.controller"};
  return m;
}

}  // namespace akts::control
