// Replacing a file whole, durably: the one writer of the state file, the policy repository's records, the MCP
// token file and the compiler's vmlinux.h.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace akts {

struct AtomicWriteOptions {
  mode_t mode = 0600;                        // the file's mode (set with fchmod: the umask does not narrow it)
  gid_t group = static_cast<gid_t>(-1);      // its group (-1: the writer's)
  bool make_dir = false;                     // create the folder (0700) when it is missing
};

// Writes `contents` to a temporary beside `path` (PATH.XXXXXX, a random name, created exclusively with at most
// 0600, then given `o.group` and then `o.mode`, all before a byte is written), writes all of it (short writes and
// EINTR retried), flushes it (fsync), renames it over `path` and flushes the folder, so that after a crash or a
// power cut `path` holds the old contents or all of the new ones, never a part. On any failure the temporary is
// removed, `path` is untouched, and the error names the step; a process killed between the temporary's creation
// and the rename leaves the temporary behind (nothing reads it; nothing removes it). A symbolic link at `path` is
// replaced, not followed. Two writers of one path at once each write their own temporary; the last rename wins.
Status write_file_atomically(const std::string& path, std::string_view contents, const AtomicWriteOptions& o = {});

}  // namespace akts
