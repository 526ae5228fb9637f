// The decision log's file, rotation and in-memory view.
#include "reasoning/decision_log.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <ctime>

#include <fmt/format.h>

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

Status DecisionLog::open() {
  std::lock_guard lock(mu_);
  if (o_.path.empty()) return {};
  std::error_code ec;
  auto parent = std::filesystem::path(o_.path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // open() reports what still fails
  struct stat st{};
  file_bytes_ = ::stat(o_.path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  file_.open(o_.path, std::ios::app);
  if (!file_) return sys_error(fmt::format("cannot open the decision log {}", o_.path), errno);
  return {};
}

void DecisionLog::rotate() {
  file_.close();
  // path.keep is dropped; path.(i) -> path.(i+1); path -> path.1.
  if (o_.keep == 0) {
    std::remove(o_.path.c_str());
  } else {
    std::remove(fmt::format("{}.{}", o_.path, o_.keep).c_str());
    for (uint32_t i = o_.keep; i > 1; --i)
      std::rename(fmt::format("{}.{}", o_.path, i - 1).c_str(), fmt::format("{}.{}", o_.path, i).c_str());
    std::rename(o_.path.c_str(), fmt::format("{}.1", o_.path).c_str());
  }
  file_.open(o_.path, std::ios::trunc);
  file_bytes_ = 0;
}

void DecisionLog::write_line(const nlohmann::json& j) {
  if (o_.path.empty() || !file_.is_open()) return;
  // Raw model output may be any bytes: replace what is not UTF-8 rather than throw.
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (file_bytes_ > 0 && file_bytes_ + line.size() > o_.max_bytes) rotate();
  file_ << line;
  file_.flush();
  if (!file_) {
    ++write_errors_;
    file_.clear();
    return;
  }
  file_bytes_ += line.size();
  written_ += line.size();
}

uint64_t DecisionLog::decision(nlohmann::json record) {
  std::lock_guard lock(mu_);
  uint64_t id = next_id_++;
  nlohmann::json j = {{"type", "decision"}, {"id", id}, {"time", utc_now_rfc3339()}};
  j.update(record);
  write_line(j);
  recent_.push_back(j);
  while (recent_.size() > o_.memory) recent_.pop_front();
  return id;
}

void DecisionLog::outcome(uint64_t ref, nlohmann::json record) {
  std::lock_guard lock(mu_);
  nlohmann::json j = {{"type", "outcome"}, {"ref", ref}};
  j.update(record);
  write_line(j);
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

}  // namespace akts
