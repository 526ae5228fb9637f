// The decision log's writer thread, file, rotation and in-memory view.
#include "reasoning/decision_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace akts {

std::string utc_now_rfc3339() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

DecisionLog::DecisionLog(DecisionLogOptions o) : o_(std::move(o)) {}

DecisionLog::~DecisionLog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<Fd> DecisionLog::open_file(const DecisionLogOptions& o) {
  if (o.path.empty()) return Fd{};
  std::error_code ec;
  auto parent = std::filesystem::path(o.path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // the open below reports what still fails
  Fd fd(::open(o.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
  if (!fd) return sys_error(fmt::format("cannot open the decision log {}", o.path), errno);
  return fd;
}

Status DecisionLog::open() {
  if (o_.path.empty()) return {};
  {
    std::lock_guard lock(mu_);
    if (open_) return {};
  }
  auto fd = open_file(o_);
  if (!fd) return fd.error();
  retarget(o_, std::move(*fd));
  return {};
}

void DecisionLog::retarget(DecisionLogOptions o, Fd fd) {
  {
    std::lock_guard lock(mu_);
    stop_ = true;  // the writer empties the queue into the old file first
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // No writer runs: its own fields are this thread's now.
  fd_ = std::move(fd);
  struct stat st{};
  file_bytes_ = fd_ && ::fstat(fd_.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  newline_pending_ = false;  // the old file's piece of a line is the old file's
  std::lock_guard lock(mu_);
  o_ = std::move(o);
  stop_ = false;
  open_ = static_cast<bool>(fd_);
  if (!open_) queue_.clear();  // memory only now: what came since the writer stopped goes nowhere
  while (recent_.size() > o_.memory) recent_.pop_front();
  if (open_) thread_ = std::thread([this] { writer(); });
}

bool DecisionLog::reopen_io(bool truncate) {
  fd_.reset();  // before the open: one descriptor at a time
  fd_.reset(::open(o_.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0640));
  if (!fd_) return false;
  struct stat st{};
  file_bytes_ = ::fstat(fd_.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return true;
}

// Writer thread only: whether the open file is no longer the one at the path (moved away or deleted).
bool DecisionLog::moved_io() const {
  struct stat on_disk{}, open_file{};
  return ::stat(o_.path.c_str(), &on_disk) != 0 || ::fstat(fd_.get(), &open_file) != 0 ||
         on_disk.st_dev != open_file.st_dev || on_disk.st_ino != open_file.st_ino;
}

// Writer thread only; never under mu_ (a slow disk must not hold up a decision).
void DecisionLog::rotate_io() {
  // Someone moved or deleted the file (logrotate, a person): start a new one, shift nothing.
  if (moved_io()) {
    reopen_io(/*truncate=*/false);
    return;
  }
  // Move the live file aside first: if that fails, nothing has been shifted or lost.
  std::string aside = o_.path + ".rotating";
  if (std::rename(o_.path.c_str(), aside.c_str()) != 0) {
    int e = errno;
    uint64_t n;
    {
      std::lock_guard lock(mu_);
      n = rotate_errors_++;
    }
    if (n == 0) spdlog::warn("decision log: cannot rotate {} ({}); it keeps growing", o_.path, std::strerror(e));
    file_bytes_ = 0;  // try again after another max_bytes
    return;
  }
  // path.keep is dropped; path.(i) -> path.(i+1); the live file -> path.1 (or gone when keep is 0).
  if (o_.keep == 0) {
    ::unlink(aside.c_str());
  } else {
    ::unlink(fmt::format("{}.{}", o_.path, o_.keep).c_str());
    for (uint32_t i = o_.keep; i > 1; --i)
      std::rename(fmt::format("{}.{}", o_.path, i - 1).c_str(), fmt::format("{}.{}", o_.path, i).c_str());
    if (std::rename(aside.c_str(), fmt::format("{}.1", o_.path).c_str()) != 0) {
      std::rename(aside.c_str(), o_.path.c_str());  // put it back and keep appending, as above
      {
        std::lock_guard lock(mu_);
        ++rotate_errors_;
      }
      file_bytes_ = 0;
      return;
    }
  }
  reopen_io(/*truncate=*/true);
}

// Writer thread only; takes mu_ just to count.
void DecisionLog::write_io(const std::string& line) {
  auto count_error = [this](int e) {
    uint64_t n;
    {
      std::lock_guard lock(mu_);
      n = write_errors_++;
    }
    if (n == 0) spdlog::warn("decision log: cannot write {} ({})", o_.path, std::strerror(e));
  };
  // A file moved away (logrotate, a person) is followed by a new one at the path, from this line on.
  if (fd_ && moved_io()) reopen_io(false);
  if (!fd_ && !reopen_io(false)) return count_error(errno);
  if (file_bytes_ > 0 && file_bytes_ + line.size() > o_.max_bytes) rotate_io();
  if (!fd_) return count_error(errno);
  // A line an earlier failure cut short is ended first, so this one parses on its own.
  std::string out = newline_pending_ ? "\n" + line : line;
  size_t done = 0;
  int err = 0;
  while (done < out.size()) {
    ssize_t n = ::write(fd_.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  file_bytes_ += done;
  if (done == out.size()) {
    newline_pending_ = false;
    std::lock_guard lock(mu_);
    written_ += line.size();
    return;
  }
  // Cut short (the disk is full, say): end the piece before the next line, and reopen then.
  newline_pending_ = newline_pending_ ? done == 0 || out[done - 1] != '\n' : done > 0;
  fd_.reset();
  count_error(err);
}

void DecisionLog::writer() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stop_ and nothing left to write
    std::string line = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    write_io(line);
    lock.lock();
    busy_ = false;
    idle_cv_.notify_all();
  }
  busy_ = false;
  idle_cv_.notify_all();
}

void DecisionLog::flush() {
  std::unique_lock lock(mu_);
  if (!open_) return;
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void DecisionLog::enqueue(const nlohmann::json& j) {
  if (!open_) return;
  if (queue_.size() >= kMaxQueued) {
    ++dropped_;
    return;
  }
  // Raw model output may be any bytes: replace what is not UTF-8 rather than throw.
  queue_.push_back(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  cv_.notify_one();
}

uint64_t DecisionLog::decision(nlohmann::json record) {
  std::lock_guard lock(mu_);
  uint64_t id = next_id_++;
  nlohmann::json j = {{"type", "decision"}, {"id", id}, {"time", utc_now_rfc3339()}};
  j.update(record);
  enqueue(j);
  recent_.push_back(j);
  while (recent_.size() > o_.memory) recent_.pop_front();
  return id;
}

void DecisionLog::outcome(uint64_t ref, nlohmann::json record) {
  std::lock_guard lock(mu_);
  nlohmann::json j = {{"type", "outcome"}, {"ref", ref}};
  j.update(record);
  enqueue(j);
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it)
    if ((*it)["id"] == ref) {
      (*it)["outcomes"].push_back(record);
      break;
    }
}

nlohmann::json DecisionLog::recent(size_t limit) const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  size_t start = recent_.size() > limit ? recent_.size() - limit : 0;
  for (size_t i = start; i < recent_.size(); ++i) out.push_back(recent_[i]);
  return out;
}

uint64_t DecisionLog::written_bytes() const {
  std::lock_guard lock(mu_);
  return written_;
}

uint64_t DecisionLog::write_errors() const {
  std::lock_guard lock(mu_);
  return write_errors_;
}

nlohmann::json DecisionLog::state() const {
  std::lock_guard lock(mu_);
  return {{"path", o_.path.empty() ? nlohmann::json(nullptr) : nlohmann::json(o_.path)},
          {"open", open_},
          {"written_bytes", written_},
          {"write_errors", write_errors_},
          {"dropped", dropped_},
          {"rotate_errors", rotate_errors_}};
}

}  // namespace akts
