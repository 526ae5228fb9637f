// write_file_atomically: temporary, write all, fsync, rename, fsync the folder.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "common/fd.h"

namespace akts {

Status write_file_atomically(const std::string& path, std::string_view contents, const AtomicWriteOptions& o) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (o.make_dir && !dir.empty() && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    int e = errno;  // before the message is built (that may allocate, which may set errno)
    return sys_error("cannot create " + dir, e);
  }
  // A name no one else can hold (mkostemp: random, created exclusively, 0600), in the target's folder so the
  // rename stays within one file system. Its group, then its mode: it is never readable by a group it was not
  // meant for, not even between the two calls.
  std::string tmp = path + ".XXXXXX";
  Fd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd) {
    int e = errno;
    return sys_error("cannot create a temporary beside " + path, e);
  }
  // `e` is read before the message is built (that may allocate, which may set errno).
  auto fail = [&](int e, const std::string& what) {
    fd.reset();
    ::unlink(tmp.c_str());
    return sys_error(what, e);
  };
  if (o.group != static_cast<gid_t>(-1) && ::fchown(fd.get(), static_cast<uid_t>(-1), o.group) != 0) {
    int e = errno;
    return fail(e, fmt::format("cannot give {} to group {}", tmp, o.group));
  }
  if (::fchmod(fd.get(), o.mode) != 0) {
    int e = errno;
    return fail(e, "cannot set the mode of " + tmp);
  }
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t w = ::write(fd.get(), contents.data() + off, contents.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      return fail(e, "cannot write " + tmp);
    }
    off += static_cast<size_t>(w);
  }
  // On disk before the rename: after a power cut the old file or the whole new one, never an empty one.
  if (::fsync(fd.get()) != 0) {
    int e = errno;
    return fail(e, "cannot flush " + tmp);
  }
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
