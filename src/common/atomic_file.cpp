// write_file_atomically: temporary, write all, fsync, rename, fsync the folder.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "common/fd.h"

namespace akts {

Status write_file_atomically(const std::string& path, std::string_view contents, const AtomicWriteOptions& o) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (o.make_dir && !dir.empty() && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return sys_error("cannot create " + dir, errno);
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = fmt::format("{}.{}.{}.tmp", path, ::getpid(), counter.fetch_add(1));
  ::unlink(tmp.c_str());  // a dead writer's, with this pid and count: never a live one's
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, o.mode));
  if (!fd) return sys_error("cannot create " + tmp, errno);
  auto fail = [&](const std::string& what, int e) {
    fd.reset();
    ::unlink(tmp.c_str());
    return sys_error(what, e);
  };
  if (::fchmod(fd.get(), o.mode) != 0) return fail("cannot set the mode of " + tmp, errno);
  if (o.group != static_cast<gid_t>(-1) && ::fchown(fd.get(), static_cast<uid_t>(-1), o.group) != 0)
    return fail(fmt::format("cannot give {} to group {}", tmp, o.group), errno);
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t w = ::write(fd.get(), contents.data() + off, contents.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail("cannot write " + tmp, w < 0 ? errno : EIO);
    off += static_cast<size_t>(w);
  }
  // On disk before the rename: after a power cut the old file or the whole new one, never an empty one.
  if (::fsync(fd.get()) != 0) return fail("cannot flush " + tmp, errno);
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return sys_error("cannot replace " + path, e);
  }
  // The rename itself. The new file is in place whatever happens here, so a folder that cannot be opened or
  // flushed is no failure of the write (the next write flushes it again).
  if (Fd d(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); d) (void)::fsync(d.get());
  return {};
}

}  // namespace akts
