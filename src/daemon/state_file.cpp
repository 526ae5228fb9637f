// The daemon's state file and its lock: atomic replacement, checked loading.
#include "daemon/state_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <thread>


#include "common/atomic_file.h"

namespace akts {
namespace {

Status ensure_dir(const std::string& file) {
  auto dir = std::filesystem::path(file).parent_path();
  if (dir.empty()) return {};
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("cannot create " + dir.string(), errno);
  return {};
}

Result<Fd> open_lock(const std::string& state_path) {
  if (auto st = ensure_dir(state_path); !st) return st.error();
  std::string path = state_path + ".lock";
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return sys_error("cannot open " + path, errno);
  return fd;
}

}  // namespace

Result<StateLock> StateLock::try_acquire(const std::string& state_path) {
  auto fd = open_lock(state_path);
  if (!fd) return fd.error();
  if (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (e == EWOULDBLOCK)
      return errorf(ErrorKind::kBusy, "another akts daemon (or its reaper) holds {}.lock", state_path);
    return sys_error("cannot lock " + state_path + ".lock", e);
  }
  return StateLock(std::move(*fd));
}

Result<StateLock> StateLock::acquire(const std::string& state_path, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto l = try_acquire(state_path);
    if (l || l.error().kind != ErrorKind::kBusy || std::chrono::steady_clock::now() >= until) return l;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}


Result<std::optional<nlohmann::json>> load_state(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return std::optional<nlohmann::json>();
    return sys_error("cannot open " + path, errno);
  }
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof(buf))) > 0 && text.size() < (64u << 20))
    text.append(buf, static_cast<size_t>(n));
  int e = errno;
  fd.reset();
  if (n < 0) return sys_error("cannot read " + path, e);
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return errorf(ErrorKind::kInvalidArgument, "{}: not a JSON object", path);
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != kStateVersion)
    return errorf(ErrorKind::kInvalidArgument, "{}: layout version {} (this akts reads {})", path,
                  j.contains("version") ? j["version"].dump() : "none", kStateVersion);
  auto bad = [&](const char* what) { return errorf(ErrorKind::kInvalidArgument, "{}: {}", path, what); };
  if (!j.contains("daemon_pid") || !j["daemon_pid"].is_number_unsigned()) return bad("no daemon_pid");
  for (const char* flag : {"clean", "reaped"})
    if (!j.contains(flag) || !j[flag].is_boolean()) return bad("clean and reaped must be true or false");
  if (!j.contains("tracker") || !j["tracker"].is_object()) return bad("no tracker record");
  if (j.contains("selected") && !j["selected"].is_object() && !j["selected"].is_null())
    return bad("selected must be an object");
  return std::optional<nlohmann::json>(std::move(j));
}

std::string selection_path(const std::string& state_path) { return state_path + ".selected"; }

std::optional<nlohmann::json> load_selection(const std::string& state_path) {
  Fd fd(::open(selection_path(state_path).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  char buf[SelectionFile::kBlock];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n <= 0) return std::nullopt;
  auto j = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

Status SelectionFile::write(const nlohmann::json& sel) {
  std::string text = sel.dump();
  if (text.size() >= kBlock) return errorf(ErrorKind::kInvalidArgument, "selection larger than {} bytes", kBlock);
  text.resize(kBlock - 1, ' ');
  text += '\n';
  if (!fd_) {
    if (auto st = ensure_dir(path_); !st) return st;
    fd_.reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd_) return sys_error("cannot open " + path_, errno);
    struct stat sb{};
    if (::fstat(fd_.get(), &sb) != 0 || !S_ISREG(sb.st_mode)) {
      fd_.reset();
      return errorf(ErrorKind::kInvalidArgument, "{} is not a regular file", path_);
    }
  }
  ssize_t w = ::pwrite(fd_.get(), text.data(), text.size(), 0);
  if (w != static_cast<ssize_t>(text.size())) return sys_error("cannot write " + path_, w < 0 ? errno : EIO);
  return {};
}

Status save_state(const std::string& path, const std::string& json_text) {
  return write_file_atomically(path, json_text + "\n", {.make_dir = true});
}

}  // namespace akts
