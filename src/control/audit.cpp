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
namespace {

// The file, never through a symlink, never blocking on a FIFO, and only a regular file; 0600 whatever the umask.
Fd open_file(const std::string& path, std::string& why) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd) {
    why = errno == ELOOP ? "it is a symbolic link" : std::strerror(errno);
    return fd;
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "it is not a regular file";
    return Fd();
  }
  ::fchmod(fd.get(), 0600);
  ::fcntl(fd.get(), F_SETFL, O_WRONLY | O_APPEND);  // blocking again: a regular file's write is whole or an error
  return fd;
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return errorf(ErrorKind::kSystem, "audit log: cannot create {}: {}", dir.string(), ec.message());
    ::chmod(dir.c_str(), 0700);
  }
  // Whoever may write the directory may replace the log: only its owner (this user) may.
  struct stat ds{};
  if (!dir.empty() && (::lstat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode) || ds.st_uid != ::geteuid() ||
                       (ds.st_mode & 0022)))
    return errorf(ErrorKind::kInvalidArgument,
                  "audit log: {} must be a directory owned by this user that no one else may write", dir.string());
  std::string why;
  Fd fd = open_file(path, why);
  if (!fd) return errorf(ErrorKind::kSystem, "audit log: cannot open {}: {}", path, why);
  struct stat st{};
  ::fstat(fd.get(), &st);
  return std::unique_ptr<AuditLog>(new AuditLog(path, std::move(fd), static_cast<uint64_t>(st.st_size), max_bytes));
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
    if (size_ + text.size() > max_bytes_ && size_ > 0) rotate();
    ssize_t n = fd_ ? ::write(fd_.get(), text.data(), text.size()) : -1;
    if (n == static_cast<ssize_t>(text.size())) {
      size_ += text.size();
      ++records_;
      return;
    }
    int err = n < 0 ? errno : ENOSPC;
    if (n > 0) {
      // Half a line: end it, so the next record starts on its own line.
      if (::write(fd_.get(), "\n", 1) == 1) size_ += static_cast<uint64_t>(n) + 1;
    }
    if (errors_++ % 1000 == 0)
      spdlog::error("audit log {}: a record could not be written ({}; {} so far); the change itself stands", path_,
                    std::strerror(err), errors_);
  } catch (...) {
    std::lock_guard lk(mu_);
    ++errors_;
  }
}

// Under mu_. The live file moves aside first, so a crash in between loses nothing; if it was moved or removed by
// someone else (logrotate), a new one is begun all the same; a failure is counted and the old file kept.
void AuditLog::rotate() {
  struct stat now{}, open_st{};
  bool same = fd_ && ::fstat(fd_.get(), &open_st) == 0 && ::lstat(path_.c_str(), &now) == 0 &&
              now.st_dev == open_st.st_dev && now.st_ino == open_st.st_ino;
  if (same && ::rename(path_.c_str(), (path_ + ".1").c_str()) != 0) {
    ++rotate_errors_;
    return;
  }
  std::string why;
  Fd fd = open_file(path_, why);
  if (!fd) {
    if (rotate_errors_++ == 0) spdlog::error("audit log {}: cannot begin a new file: {}", path_, why);
    return;
  }
  fd_ = std::move(fd);
  size_ = 0;
}

nlohmann::json AuditLog::state() const {
  std::lock_guard lk(mu_);
  return {{"path", path_}, {"records", records_}, {"write_errors", errors_}, {"rotate_errors", rotate_errors_}};
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
  // v1.controller, v1.objective and v1.stats change something only with params (a controller, an objective,
  // reset_longest): the hook filters.
  static const std::set<std::string, std::less<>> m = {"v1.switch",     "v1.classify", "v1.unclassify",
                                                       "v1.hold",       "v1.release",  "v1.controller",
                                                       "v1.objective", "v1.result",   "v1.admit",
                                                       "v1.evict",     "v1.stats",    "v1.set",
                                                       "v1.hint",       "v1.reload"};
  return m;
}

void audit_dispatcher(Dispatcher& d, AuditLog& log) {
  d.set_audit(audited_methods(), [&log](const Caller& who, std::string_view method, const json& params,
                                        const json& result) {
    if ((method == "v1.controller" || method == "v1.objective") && params.empty()) return;  // a reading
    if (method == "v1.stats") {
      // A reading, unless it resets the longest waits: then the reset is the change, not the figures.
      if (!params.is_object() || !params.value("reset_longest", false)) return;
      log.record(who, method, params, json{{"reset_longest", true}});
      return;
    }
    log.record(who, method, params, result);
  });
}

}  // namespace akts::control
