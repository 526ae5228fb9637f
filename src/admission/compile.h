// Admission gate 1: a candidate's BPF C source compiled with clang against a
// kernel's BTF (a vmlinux.h written from it here, with libbpf's BTF dumper, as
// bpftool does) and akts's headers (the contract: akts.h, the frame, the scx
// and libbpf headers). The compiler runs as a child process with fixed
// arguments (no shell), its output kept as the evidence.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::admission {

struct CompileOptions {
  std::string btf = "/sys/kernel/btf/vmlinux";  // the running kernel's BTF, or a vmlinux with .BTF
  std::vector<std::string> include_dirs;          // empty: default_include_dirs()
  std::string clang;                              // empty: the newest clang-NN on PATH
  std::string work_dir;                           // where vmlinux.h and the object go (made if missing);
                                                  // empty: a fresh private directory under /tmp
};

struct CompileReport {
  bool passed = false;
  std::string object;  // the compiled object, when passed
  std::string work_dir;  // where it and vmlinux.h are; the caller removes it (remove_work_dir) when done
  std::string clang;
  std::vector<std::string> argv;
  std::string output;  // what clang printed (at most 16 KiB)
  nlohmann::json to_json() const;
};

// Where akts's BPF headers are: $AKTS_INCLUDE (colon-separated), else
// <this binary's dir>/../include when it holds akts.h (an installed or guest
// layout: akts's headers, scx/, bpf-compat/, libbpf's bpf/), else the source
// tree and toolchain this binary was built from.
std::vector<std::string> default_include_dirs();

// Writes vmlinux.h for `btf` into `out`; refuses a BTF without sched_ext.
Status write_vmlinux_h(const std::string& btf, const std::string& out);

// For a source from a less trusted caller (an MCP agent): every line that
// names a way to read another file (include, include_next, import, embed,
// __has_include, __has_embed, incbin), once backslash-newlines are joined, must
// be a plain `#include "name.h"` or `#include <dir/name.h>` with a relative
// name and no "..", so that clang's diagnostics cannot quote a file the
// server may read and the agent may not. `%:` (the digraph of #) is refused.
Status check_agent_source(const std::string& text);

// Removes a work directory compile_source made (the object and vmlinux.h in it).
void remove_work_dir(const std::string& dir);

// An error only when the compiler cannot be run at all; a source that does not
// compile is a report with passed false and clang's diagnostics.
Result<CompileReport> compile_source(const std::string& source, const CompileOptions& o);

}  // namespace akts::admission
