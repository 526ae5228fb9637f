// Gate 1: vmlinux.h from a kernel's BTF (libbpf's dumper, kfunc prototypes included) and clang on the candidate.
#include "admission/compile.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/btf.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/fd.h"
#include "common/text.h"

namespace akts::admission {
namespace {

void print_to(void* ctx, const char* fmt, va_list args) { vfprintf(static_cast<FILE*>(ctx), fmt, args); }

std::string self_dir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.parent_path().string();
}

std::string find_clang() {
  for (int v = 22; v >= 14; --v) {
    std::string name = fmt::format("clang-{}", v);
    for (const char* dir : {"/usr/bin", "/usr/local/bin"})
      if (::access(fmt::format("{}/{}", dir, name).c_str(), X_OK) == 0) return fmt::format("{}/{}", dir, name);
  }
  for (const char* c : {"/usr/bin/clang", "/usr/local/bin/clang"})
    if (::access(c, X_OK) == 0) return c;
  return "";
}

}  // namespace

Status check_agent_source(const std::string& text) {
  std::string joined;
  joined.reserve(text.size());
  std::vector<size_t> line_of;  // joined offset -> the source line it came from
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || (text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n'))) {
      i += text[i + 1] == '\r' ? 2 : 1;
      ++line;
      continue;
    }
    joined.push_back(text[i]);
    line_of.push_back(line);
    if (text[i] == '\n') ++line;
  }
  static const std::regex kWords(R"(\b(include|include_next|import|embed|__has_include|__has_include_next|__has_embed|incbin)\b)");
  static const std::regex kPlain(R"(^[ \t]*#[ \t]*include[ \t]*(<[A-Za-z0-9_][A-Za-z0-9_./-]*>|"[A-Za-z0-9_][A-Za-z0-9_./-]*")[ \t]*\r?$)");
  size_t start = 0;
  while (start < joined.size()) {
    size_t end = joined.find('\n', start);
    if (end == std::string::npos) end = joined.size();
    std::string l = joined.substr(start, end - start);
    size_t at = start < line_of.size() ? line_of[start] : line;
    if (l.find("%:") != std::string::npos)
      return errorf(ErrorKind::kInvalidArgument, "line {}: \"%:\" (the digraph of #) is not accepted in an agent's source", at);
    if (std::regex_search(l, kWords) && (!std::regex_match(l, kPlain) || l.find("..") != std::string::npos))
      return errorf(ErrorKind::kInvalidArgument,
                    "line {}: an agent's source may only #include a header by a relative name without \"..\" "
                    "(e.g. #include \"akts_policy.bpf.h\"), and names no other file: {}",
                    at, excerpt(valid_utf8(l)));
    start = end + 1;
  }
  return {};
}

void remove_work_dir(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

nlohmann::json CompileReport::to_json() const {
  return {{"gate", "compile"}, {"passed", passed}, {"object", object}, {"clang", clang}, {"argv", argv},
          {"output", output}};
}

std::vector<std::string> default_include_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("AKTS_INCLUDE"); env && *env) {
    std::string s(env);
    for (size_t start = 0, end; start <= s.size(); start = end + 1) {
      end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
    }
    return dirs;
  }
  std::error_code ec;
  // The installed layouts: share/akts/include/ (the package, cmake/install.cmake) or include/ beside bin/ (the
  // guest's payload) holds akts's headers, scx/, bpf-compat/ and libbpf's bpf/.
  for (const char* rel : {"/../share/akts/include", "/../include"}) {
    std::string installed = self_dir() + rel;
    if (std::filesystem::exists(installed + "/akts.h", ec)) return {installed, installed + "/bpf-compat"};
  }
#ifdef AKTS_BUILD_INCLUDE_DIRS
  std::string s(AKTS_BUILD_INCLUDE_DIRS);
  for (size_t start = 0, end; start <= s.size(); start = end + 1) {
    end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) dirs.push_back(s.substr(start, end - start));
  }
#endif
  return dirs;
}

Status write_vmlinux_h(const std::string& btf_path, const std::string& out) {
  struct btf* btf = btf__parse(btf_path.c_str(), nullptr);
  if (!btf) return sys_error("cannot read BTF from " + btf_path, errno);
  if (btf__find_by_name_kind(btf, "sched_ext_ops", BTF_KIND_STRUCT) < 0) {
    btf__free(btf);
    return errorf(ErrorKind::kUnsupported, "{} describes a kernel without sched_ext (no struct sched_ext_ops)", btf_path);
  }
  // Dumped into memory, then written whole (common/atomic_file.h): a reader never sees half a header.
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = ::open_memstream(&buf, &len);
  if (!f) {
    int e = errno;
    btf__free(btf);
    return sys_error("cannot dump the BTF of " + btf_path, e);
  }
  struct btf_dump* d = btf_dump__new(btf, print_to, f, nullptr);
  int err = d ? 0 : -errno;
  std::fputs(
      "#ifndef __VMLINUX_H__\n#define __VMLINUX_H__\n\n#ifndef BPF_NO_PRESERVE_ACCESS_INDEX\n"
      "#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)\n#endif\n\n"
      "#ifndef __ksym\n#define __ksym __attribute__((section(\".ksyms\")))\n#endif\n\n"
      "#ifndef __weak\n#define __weak __attribute__((weak))\n#endif\n\n",
      f);
  uint32_t n = btf__type_cnt(btf);
  for (uint32_t id = 1; d && !err && id < n; ++id) err = btf_dump__dump_type(d, id);
  // Kernel functions BPF may call (tagged bpf_kfunc), declared as bpftool does, for sources that do not declare them.
  std::set<uint32_t> kfuncs;
  std::fputs("\n#ifndef BPF_NO_KFUNC_PROTOTYPES\n", f);  // as bpftool: headers that declare their own opt out
  for (uint32_t id = 1; d && !err && id < n; ++id) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    if (btf_kind(t) != BTF_KIND_DECL_TAG || std::string_view(btf__name_by_offset(btf, t->name_off)) != "bpf_kfunc")
      continue;
    const struct btf_type* fn = btf__type_by_id(btf, t->type);
    if (!fn || btf_kind(fn) != BTF_KIND_FUNC || !kfuncs.insert(t->type).second) continue;
    btf_dump_emit_type_decl_opts opts{};
    opts.sz = sizeof(opts);
    opts.field_name = btf__name_by_offset(btf, fn->name_off);
    std::fputs("extern ", f);
    err = btf_dump__emit_type_decl(d, fn->type, &opts);
    std::fputs(" __weak __ksym;\n", f);
  }
  std::fputs("#endif\n", f);
  std::fputs("\n#ifndef BPF_NO_PRESERVE_ACCESS_INDEX\n#pragma clang attribute pop\n#endif\n\n#endif /* __VMLINUX_H__ */\n", f);
  if (d) btf_dump__free(d);
  btf__free(btf);
  bool closed = std::fclose(f) == 0;
  const std::string text = closed && buf ? std::string(buf, len) : std::string();
  std::free(buf);
  if (err || !closed) return sys_error("cannot dump the BTF of " + btf_path, err ? -err : errno);
  return write_file_atomically(out, text, {.mode = 0644});
}

Result<CompileReport> compile_source(const std::string& source, const CompileOptions& o) {
  CompileReport rep;
  rep.clang = o.clang.empty() ? find_clang() : o.clang;
  if (rep.clang.empty())
    return make_error(ErrorKind::kUnsupported, "no clang here (clang-14 or newer compiles BPF): install clang-19");
  std::error_code ec;
  if (!std::filesystem::exists(source, ec)) return errorf(ErrorKind::kInvalidArgument, "no source file {}", source);
  std::string work = o.work_dir;
  if (work.empty()) {
    // Private to this call (0700, a fresh name): another local user cannot swap the object between the gates.
    char tmpl[] = "/tmp/akts-admit-XXXXXX";
    if (!::mkdtemp(tmpl)) return sys_error("cannot create a work directory under /tmp", errno);
    work = tmpl;
  } else {
    std::filesystem::create_directories(work, ec);
    if (ec) return errorf(ErrorKind::kSystem, "cannot create {}: {}", work, ec.message());
  }
  rep.work_dir = work;
  // A work directory made here goes again with any error (a report hands it to the caller).
  auto drop = [&](Error e) -> Result<CompileReport> {
    if (o.work_dir.empty()) remove_work_dir(work);
    return e;
  };
  if (auto st = write_vmlinux_h(o.btf, work + "/vmlinux.h"); !st) return drop(st.error());
  auto dirs = o.include_dirs.empty() ? default_include_dirs() : o.include_dirs;
  if (dirs.empty()) return drop(make_error(ErrorKind::kUnsupported, "akts's BPF headers were not found: set AKTS_INCLUDE"));
  std::string stem = std::filesystem::path(source).filename().string();
  if (auto dot = stem.find('.'); dot != std::string::npos) stem = stem.substr(0, dot);
  rep.object = fmt::format("{}/{}.bpf.o", work, stem.empty() ? "candidate" : stem);
  rep.argv = {rep.clang, "-g", "-O2", "-target", "bpf", "-mcpu=v3", "-mlittle-endian", "-D__TARGET_ARCH_x86",
              "-fms-extensions", "-Wno-microsoft-anon-tag", "-Wall", "-Wno-compare-distinct-pointer-types",
              "-I" + work};
  for (const auto& d : dirs) rep.argv.push_back("-I" + d);
  for (const auto& a : {std::string("-c"), source, std::string("-o"), rep.object}) rep.argv.push_back(a);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return drop(sys_error("pipe", errno));
  Fd out_r(pipefd[0]), out_w(pipefd[1]);  // the parent's; the child never returns from below (it execs or _exits)
  std::vector<char*> argv;
  for (auto& a : rep.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return drop(sys_error("fork", errno));
  if (pid == 0) {
    // Its own process group (a timeout stops clang and everything it started), nothing to read, no inherited
    // descriptors (the daemon's socket, an MCP session's connection) but its output.
    // It dies with its caller (its own group no longer hears the terminal's Ctrl-C), and hears the signals
    // its caller's threads block (the MCP server's HTTP mode blocks SIGINT and SIGTERM for its signal thread).
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int null = ::open("/dev/null", O_RDONLY);
    if (null < 0 || ::dup2(null, 0) < 0) _exit(126);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::close_range(3, ~0U, 0);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  // Also here: no race with the timeout's kill of the group. Should both fail, the timeout kills clang alone.
  const bool own_group = ::setpgid(pid, pid) == 0 || ::getpgid(pid) == pid;
  out_w.reset();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  char buf[4096];
  for (;;) {
    pollfd p{out_r.get(), POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(own_group ? -pid : pid, SIGKILL);
      rep.output += "\n[akts: clang took longer than 120 s and was stopped]";
      break;
    }
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::read(out_r.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (rep.output.size() < 16384) rep.output.append(buf, static_cast<size_t>(n));
  }
  out_r.reset();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  rep.output = valid_utf8(rep.output);
  rep.passed = WIFEXITED(status) && WEXITSTATUS(status) == 0 && std::filesystem::exists(rep.object, ec);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) rep.output += fmt::format("[akts: cannot execute {}]", rep.clang);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 126) rep.output += "[akts: cannot open /dev/null for the compiler]";
  return rep;
}

}  // namespace akts::admission
