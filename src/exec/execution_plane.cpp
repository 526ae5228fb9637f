#include "exec/execution_plane.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <signal.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "exec/btf_rodata.h"
#include "exec/policy_library.h"
#include "exec/sched_ext_sysfs.h"
#include "exec/skeletons.h"

namespace akts {
namespace {

// libbpf output is captured while a load runs, so a verifier rejection can be
// reported with its key lines instead of only an errno.
std::mutex g_capture_mu;
std::vector<std::string>* g_capture = nullptr;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  // The verifier log arrives as one large chunk: size the buffer to it.
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string line(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) vsnprintf(line.data(), line.size() + 1, fmt, args);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  {
    std::lock_guard lock(g_capture_mu);
    if (g_capture) {
      // The verifier log arrives as one big chunk; keep it line by line.
      size_t start = 0;
      while (start <= line.size()) {
        size_t nl = line.find('\n', start);
        g_capture->push_back(line.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
  }
  // Warnings reach the user through the returned Error (with the key lines);
  // everything libbpf says is visible with -v.
  spdlog::debug("libbpf{}: {}", level == LIBBPF_WARN ? " warning" : "", line);
  return n;
}

class LibbpfCapture {
 public:
  LibbpfCapture() {
    std::lock_guard lock(g_capture_mu);
    g_capture = &lines_;
  }
  ~LibbpfCapture() {
    std::lock_guard lock(g_capture_mu);
    g_capture = nullptr;
  }
  // The lines that explain a failed load: in each program's verifier log, the
  // messages (not the instruction trace, source notes or the long advice), e.g.
  // "R0 unbounded memory access, ..." and "Verification failed: ...", then
  // libbpf's own failure lines.
  std::vector<std::string> key_lines() const {
    std::vector<std::string> out;
    bool in_log = false, kfunc_missing = false;
    for (const auto& l : lines_) {
      if (l.find("BEGIN PROG LOAD LOG") != std::string::npos) {
        in_log = true;
        continue;
      }
      if (l.find("END PROG LOAD LOG") != std::string::npos) {
        in_log = false;
        continue;
      }
      if (in_log) {
        bool trace = l.empty() || std::isdigit(static_cast<unsigned char>(l[0])) || l[0] == ';' || l[0] == ' ' ||
                     l.starts_with("func '") || l.starts_with("Suggestion") || l.starts_with("Reason") ||
                     l.starts_with("processed") || l.starts_with("from ") || l.starts_with("last_idx") ||
                     (l.back() == ':' && l.find(' ') == std::string::npos);  // section headers: "At:"
        if (!trace) out.push_back(l);
      } else if (l.find("libbpf: prog '") != std::string::npos && l.find("failed") != std::string::npos) {
        out.push_back(l);
      } else if (l.find("extern (func ksym)") != std::string::npos &&
                 (l.find("incompatible with") != std::string::npos ||
                  l.find("not found in kernel") != std::string::npos)) {
        out.push_back(l);  // a kfunc akts needs that this kernel declares otherwise, or lacks (not "resolved to")
        kfunc_missing = true;
      }
    }
    if (out.size() > 12) out.erase(out.begin(), out.end() - 12);
    if (kfunc_missing)
      out.push_back(
          "this kernel cannot give akts a kernel function it needs (some 7.2.x builds left sched_ext kfuncs "
          "uncallable: their BTF kept the implicit aux and has no _impl); vm/kfunc_compat.py names them, "
          "docs/deploy.md (More kernels) lists the kernels akts runs on");
    return out;
  }
  bool mentions_verifier() const {
    for (const auto& l : lines_)
      if (l.find("BEGIN PROG LOAD LOG") != std::string::npos || l.find("processed ") == 0) return true;
    return false;
  }

 private:
  std::vector<std::string> lines_;
};

Error load_error(const std::string& what, int ret, const LibbpfCapture& cap) {
  Error e = sys_error(what, ret);
  e.kind = cap.mentions_verifier() ? ErrorKind::kVerifier : ErrorKind::kLoad;
  e.details = cap.key_lines();
  return e;
}

// Per dispatched callback: its prog array and the dispatcher's own program.
struct CallbackParts {
  bpf_map* progs;
  bpf_program* dispatcher;
};

CallbackParts callback_parts(akts_dispatcher_bpf* s, uint32_t cb) {
  switch (cb) {
    case AKTS_CB_SELECT_CPU: return {s->maps.akts_select_cpu_progs, s->progs.akts_select_cpu};
    case AKTS_CB_ENQUEUE: return {s->maps.akts_enqueue_progs, s->progs.akts_enqueue};
    case AKTS_CB_DISPATCH: return {s->maps.akts_dispatch_progs, s->progs.akts_dispatch};
    case AKTS_CB_RUNNABLE: return {s->maps.akts_runnable_progs, s->progs.akts_runnable};
    case AKTS_CB_RUNNING: return {s->maps.akts_running_progs, s->progs.akts_running};
    case AKTS_CB_STOPPING: return {s->maps.akts_stopping_progs, s->progs.akts_stopping};
    case AKTS_CB_QUIESCENT: return {s->maps.akts_quiescent_progs, s->progs.akts_quiescent};
    default: return {nullptr, nullptr};
  }
}

bpf_map* dispatcher_prog_array(akts_dispatcher_bpf* s, uint32_t cb) { return callback_parts(s, cb).progs; }

}  // namespace

void route_libbpf_logging() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(libbpf_print); });
}

Result<std::unique_ptr<ExecutionPlane>> ExecutionPlane::load(const PlaneOptions& opts) {
  std::unique_ptr<ExecutionPlane> plane(new ExecutionPlane());
  if (auto st = plane->init(opts); !st) return st.error();
  return plane;
}

Status ExecutionPlane::init(const PlaneOptions& opts) {
  route_libbpf_logging();
  if (opts.policies.size() > AKTS_MAX_SLOTS)
    return errorf(ErrorKind::kInvalidArgument, "{} policies given; the library has {} slots", opts.policies.size(),
                  AKTS_MAX_SLOTS);
  for (const auto& name : opts.policies)
    if (!find_policy(name)) return errorf(ErrorKind::kInvalidArgument, "no policy named '{}'", name);
  if (opts.watchdog_timeout_ms > 30000)
    return errorf(ErrorKind::kInvalidArgument, "the watchdog timeout is at most 30000 ms, not {}",
                  opts.watchdog_timeout_ms);
  if (opts.watchdog_timeout_ms && opts.guard.enabled &&
      opts.guard.max_wait + 2 * opts.guard.period >= std::chrono::milliseconds(opts.watchdog_timeout_ms))
    return errorf(ErrorKind::kInvalidArgument,
                  "the guard's max_wait plus two periods must stay below the {} ms watchdog, or the kernel ejects "
                  "the scheduler before the guard acts",
                  opts.watchdog_timeout_ms);
  if (opts.breaker.safe_slot != AKTS_SLOT_NONE && opts.breaker.safe_slot >= opts.policies.size())
    return errorf(ErrorKind::kInvalidArgument, "the breaker's safe slot {} holds no policy", opts.breaker.safe_slot);
  if (auto st = load_dispatcher(opts); !st) return st;
  if (auto st = set_guard(opts.guard); !st) return st;
  if (auto st = set_breaker(opts.breaker); !st) return st;
  for (uint32_t slot = 0; slot < opts.policies.size(); ++slot)
    if (auto st = admit(*find_policy(opts.policies[slot]), slot); !st) return st;
  select(opts.initial_slot);
  return {};
}

void ExecutionPlane::release() {
  if (link_) {
    auto st = detach();
    if (!st) spdlog::warn("detach: {}", st.error().to_string());
  }
  if (selector_) munmap(selector_, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  selector_ = nullptr;
  if (params_) munmap(params_, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  params_ = nullptr;
  {
    std::lock_guard lock(policies_mu_);
    objects_.clear();
    policies_.clear();
  }
  if (skel_) akts_dispatcher_bpf__destroy(skel_);
  skel_ = nullptr;
  was_attached_ = false;
}

Status ExecutionPlane::reload(const PlaneOptions& opts) {
  release();
  return init(opts);
}

Status ExecutionPlane::load_dispatcher(const PlaneOptions& opts) {
  skel_ = akts_dispatcher_bpf__open();
  if (!skel_) return sys_error("cannot open the dispatcher's BPF object", errno);
  auto* ops = skel_->struct_ops.akts_ops;
  if (opts.switch_all) {
    auto partial = kernel_enum_value("SCX_OPS_SWITCH_PARTIAL");
    if (!partial) return partial.error();
    ops->flags &= ~static_cast<uint64_t>(*partial);
  }
  ops->hotplug_seq = read_hotplug_seq();
  if (opts.watchdog_timeout_ms) ops->timeout_ms = opts.watchdog_timeout_ms;
  if (auto st = init_scx_enums(skel_->obj); !st) return st;

  // Room for the kernel's debug dump when it ejects the scheduler.
  constexpr uint32_t kDumpLen = UEI_DUMP_DFL_LEN;
  skel_->rodata->uei_dump_len = kDumpLen;
  if (int err = bpf_map__set_value_size(skel_->maps.data_uei_dump, kDumpLen); err)
    return sys_error("cannot size the exit dump buffer", err);
  size_t sz = 0;
  skel_->data_uei_dump = static_cast<decltype(skel_->data_uei_dump)>(
      bpf_map__initial_value(skel_->maps.data_uei_dump, &sz));

  LibbpfCapture cap;
  if (int err = akts_dispatcher_bpf__load(skel_); err) return load_error("cannot load the dispatcher", err, cap);

  // One page of a BPF_F_MMAPABLE map, shared and writable; nullptr with errno when the kernel refuses.
  auto map_page = [](bpf_map* m) -> void* {
    void* p = mmap(nullptr, static_cast<size_t>(sysconf(_SC_PAGESIZE)), PROT_READ | PROT_WRITE, MAP_SHARED,
                   bpf_map__fd(m), 0);
    return p == MAP_FAILED ? nullptr : p;
  };
  selector_ = static_cast<akts_selector*>(map_page(skel_->maps.akts_selector));
  if (!selector_) return sys_error("cannot mmap the selector map", errno);
  static_assert(sizeof(akts_param_values) * AKTS_MAX_SLOTS <= 4096, "the parameters fit one page");
  params_ = static_cast<akts_param_values*>(map_page(skel_->maps.akts_params));
  if (!params_) return sys_error("cannot mmap the parameters map", errno);
  return {};
}

Status ExecutionPlane::check_free_slot(uint32_t slot) const {
  if (slot >= AKTS_MAX_SLOTS)
    return errorf(ErrorKind::kInvalidArgument, "slot {} is out of range (0 to {})", slot, AKTS_MAX_SLOTS - 1);
  for (const auto& p : policies_)
    if (p.slot == slot) return errorf(ErrorKind::kInvalidArgument, "slot {} already holds {}", slot, p.name);
  for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) {
    auto id = slot_prog_id(cb, slot);
    if (!id) return id.error();
    if (*id != 0) return errorf(ErrorKind::kInvalidArgument, "slot {} of the {} array is in use", slot, callback_name(cb));
  }
  return {};
}

Status ExecutionPlane::admit(const PolicySpec& spec, uint32_t slot) {
  if (auto st = check_free_slot(slot); !st) return st;
  auto opened = spec.open();
  if (!opened) return opened.error();
  return load_policy(std::string(spec.name), std::move(opened).value(), slot, false);
}

Status ExecutionPlane::admit_object(std::string bytes, const std::string& path, const std::string& name, uint32_t slot,
                                    bool replace) {
  for (const auto& p : policies_)
    if (p.name == name && !(replace && p.slot == slot))
      return errorf(ErrorKind::kInvalidArgument, "a policy named {} is loaded already (slot {})", name, p.slot);
  if (replace) {
    if (auto st = check_replaceable(slot); !st) return st;
  } else if (auto st = check_free_slot(slot); !st) {
    return st;
  }
  // The bytes stay with the object: libbpf reads them until the load.
  struct InMemory {
    std::string bytes;
    bpf_object* obj = nullptr;
  };
  auto mem = std::make_unique<InMemory>();
  mem->bytes = std::move(bytes);
  LibbpfCapture cap;
  bpf_object_open_opts opts{};
  opts.sz = sizeof(opts);
  opts.object_name = name.c_str();
  mem->obj = bpf_object__open_mem(mem->bytes.data(), mem->bytes.size(), &opts);
  if (!mem->obj) return load_error(fmt::format("cannot open the policy object {}", path), -errno, cap);
  bpf_object* obj = mem->obj;
  auto pol = std::make_unique<PolicyObject>(
      mem.release(), obj, [](void* m) { return bpf_object__load(static_cast<InMemory*>(m)->obj); },
      [](void* m) {
        auto* im = static_cast<InMemory*>(m);
        bpf_object__close(im->obj);
        delete im;
      });
  return load_policy(name, std::move(pol), slot, replace);
}

Status ExecutionPlane::check_replaceable(uint32_t slot) const {
  const LoadedPolicy* lp = nullptr;
  for (const auto& p : policies_)
    if (p.slot == slot) lp = &p;
  if (!lp) return errorf(ErrorKind::kInvalidArgument, "slot {} holds no policy to replace", slot);
  if (slot == selected()) return errorf(ErrorKind::kInvalidArgument, "slot {} ({}) is selected: switch away first", slot, lp->name);
  if (slot == effective_slot())
    return errorf(ErrorKind::kInvalidArgument, "slot {} ({}) is running (the override holds it)", slot, lp->name);
  if (auto b = read_breaker(); !b) {
    return b.error();
  } else if (b->params.armed && b->params.safe_slot == slot) {
    return errorf(ErrorKind::kInvalidArgument, "slot {} ({}) is the circuit breaker's safe slot", slot, lp->name);
  }
  return {};
}

Status ExecutionPlane::evict(uint32_t slot) {
  size_t at = policies_.size();
  for (size_t i = 0; i < policies_.size(); ++i)
    if (policies_[i].slot == slot) at = i;
  if (at == policies_.size()) return errorf(ErrorKind::kInvalidArgument, "slot {} holds no policy", slot);
  const LoadedPolicy& lp = policies_[at];
  if (auto st = check_replaceable(slot); !st) return st;  // the same rules: never the running slot
  for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) {
    if (lp.prog_fds[cb] < 0) continue;
    int afd = bpf_map__fd(dispatcher_prog_array(skel_, cb));
    if (bpf_map_delete_elem(afd, &slot) != 0 && errno != ENOENT) {
      int saved = errno;
      for (uint32_t undo = 0; undo < cb; ++undo)
        if (lp.prog_fds[undo] >= 0)
          bpf_map_update_elem(bpf_map__fd(dispatcher_prog_array(skel_, undo)), &slot, &lp.prog_fds[undo], BPF_ANY);
      return sys_error(fmt::format("policy {}: cannot take its {} program out of slot {}", lp.name, callback_name(cb), slot),
                       saved);
    }
  }
  spdlog::info("policy {} evicted from slot {}", lp.name, slot);
  std::unique_ptr<PolicyObject> gone;
  {
    std::lock_guard lock(policies_mu_);
    gone = std::move(objects_[at]);
    objects_.erase(objects_.begin() + static_cast<std::ptrdiff_t>(at));
    policies_.erase(policies_.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return {};  // `gone` closes the object: the kernel keeps each program while a tail call runs it
}

Status ExecutionPlane::load_policy(const std::string& name, std::unique_ptr<PolicyObject> pol, uint32_t slot,
                                  bool replacing) {
  bpf_object* obj = pol->obj();

  // A running scheduler's slot is filled only once its private queues are empty: what the policy that was
  // there left is drained by the effective one (as another slot's), or by the guard within its bound.
  if (attached()) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (;;) {
      auto n = slot_queued(slot);
      if (!n) return n.error();
      if (*n == 0) break;
      if (std::chrono::steady_clock::now() >= until)
        return errorf(ErrorKind::kBusy, "policy {}: slot {}'s private queues still hold {} task(s) of the policy "
                      "that was there after 2 s; try again", name, slot, *n);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  if (auto st = set_rodata_value<uint32_t>(obj, "akts_slot", slot); !st) return st;
  if (auto st = init_scx_enums(obj); !st) return st;

  // Point the policy's copies of the shared maps (akts_common.bpf.h) at the
  // dispatcher's. Only those: a policy that declares one of the frame's own
  // maps (the guard's, the override, the prog arrays) is refused, so no
  // policy, admitted at run time or not, can reach them.
  static constexpr std::string_view kShared[] = {"akts_selector", "akts_stats", "akts_tasks", "akts_classes",
                                                 "akts_shared", "akts_params", "akts_hints"};
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS) {
      bpf_map__set_autoattach(map, false);  // a holder: never registered
      continue;
    }
    if (bpf_map__is_internal(map)) continue;  // the policy's own .rodata, .bss, .data.*
    std::string_view mname = bpf_map__name(map);
    bool shared_name = std::find(std::begin(kShared), std::end(kShared), mname) != std::end(kShared);
    bpf_map* dispatcher_map = bpf_object__find_map_by_name(skel_->obj, bpf_map__name(map));
    if (!shared_name) {
      if (dispatcher_map)
        return errorf(ErrorKind::kInvalidArgument, "policy {}: map {} belongs to the frame; a policy may share only "
                      "the maps of akts_common.bpf.h", name, mname);
      continue;  // a map of the policy's own
    }
    if (!dispatcher_map) continue;
    if (int err = bpf_map__reuse_fd(map, bpf_map__fd(dispatcher_map)); err)
      return sys_error(fmt::format("policy {}: cannot share map {}", name, mname), err);
  }

  // Its parameters, read from the object before load; malformed descriptors refuse the policy.
  auto parsed = read_param_descs(obj);
  if (!parsed) return errorf(ErrorKind::kInvalidArgument, "policy {}: {}", name, parsed.error().message);
  std::vector<ParamDesc> params = std::move(parsed).value();

  LibbpfCapture cap;
  if (int err = pol->load(); err) return load_error(fmt::format("policy {} failed to load", name), err, cap);

  // The defaults, before its programs can run (a replaced policy's values go with it: the old programs still
  // running until their arrays change clamp whatever they read to their own ranges). The values they replace
  // come back if the slot's programs do (a failed replacement changes nothing).
  akts_param_values saved{};
  for (uint32_t i = 0; i < AKTS_MAX_PARAMS; ++i)
    saved.v[i] = std::atomic_ref<__u64>(params_[slot].v[i]).load(std::memory_order_acquire);
  for (uint32_t i = 0; i < AKTS_MAX_PARAMS; ++i) {
    uint64_t def = 0;
    for (const auto& d : params)
      if (d.index == i) def = d.def;
    std::atomic_ref<__u64>(params_[slot].v[i]).store(def, std::memory_order_release);
  }

  LoadedPolicy lp;
  lp.name = name;
  lp.slot = slot;
  lp.params = std::move(params);
  lp.prog_fds.fill(-1);
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    std::string_view pname = bpf_program__name(prog);
    for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) {
      auto suffix = callback_name(cb);  // programs are named "<policy>_<callback>"
      if (pname.size() > suffix.size() && pname.ends_with(suffix) && pname[pname.size() - suffix.size() - 1] == '_')
        lp.prog_fds[cb] = bpf_program__fd(prog);
    }
  }

  // Fill this policy's slot in every callback's array (over the replaced policy's programs, if any); put back
  // what was there if one step fails.
  const LoadedPolicy* old = nullptr;
  size_t old_at = policies_.size();
  for (size_t i = 0; i < policies_.size(); ++i)
    if (replacing && policies_[i].slot == slot) old = &policies_[(old_at = i)];
  auto restore = [&](uint32_t upto) {
    for (uint32_t i = 0; i < AKTS_MAX_PARAMS; ++i)
      std::atomic_ref<__u64>(params_[slot].v[i]).store(saved.v[i], std::memory_order_release);
    for (uint32_t undo = 0; undo < upto; ++undo) {
      int afd = bpf_map__fd(dispatcher_prog_array(skel_, undo));
      if (old && old->prog_fds[undo] >= 0)
        bpf_map_update_elem(afd, &slot, &old->prog_fds[undo], BPF_ANY);
      else
        bpf_map_delete_elem(afd, &slot);
    }
  };
  for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) {
    int afd = bpf_map__fd(dispatcher_prog_array(skel_, cb));
    if (lp.prog_fds[cb] < 0) {
      spdlog::warn("policy {} has no {} program: slot {} falls through there", name, callback_name(cb), slot);
      if (old && old->prog_fds[cb] >= 0 && bpf_map_delete_elem(afd, &slot) != 0 && errno != ENOENT) {
        int saved = errno;
        restore(cb);
        return sys_error(fmt::format("policy {}: cannot take the replaced {} program out of slot {}", name,
                                     callback_name(cb), slot),
                         saved);
      }
      continue;
    }
    if (int err = bpf_map_update_elem(afd, &slot, &lp.prog_fds[cb], BPF_ANY); err) {
      int saved = errno;
      restore(cb);
      return sys_error(fmt::format("policy {}: the kernel refused its {} program in slot {}", name,
                                   callback_name(cb), slot),
                       saved);
    }
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_prog_get_info_by_fd(lp.prog_fds[cb], &info, &len) == 0) lp.prog_ids[cb] = info.id;
  }
  spdlog::debug("policy {} loaded into slot {}{}", name, slot, old ? " (replacing " + old->name + ")" : "");
  std::unique_ptr<PolicyObject> gone;  // the replaced object, closed after the lock
  std::lock_guard lock(policies_mu_);
  if (old) {
    gone = std::move(objects_[old_at]);
    policies_[old_at] = std::move(lp);
    objects_[old_at] = std::move(pol);
  } else {
    policies_.push_back(std::move(lp));
    objects_.push_back(std::move(pol));
  }
  return {};
}

ExecutionPlane::~ExecutionPlane() { release(); }

Status ExecutionPlane::attach(std::chrono::milliseconds timeout) {
  if (link_) return {};
  if (was_attached_)
    return make_error(ErrorKind::kInvalidArgument,
                      "this execution plane was attached before; load a new one to attach again");
  auto state = read_sched_ext_state();
  if (!state.supported)
    return make_error(ErrorKind::kUnsupported,
                      "this kernel has no sched_ext (no /sys/kernel/sched_ext): run akts in the guest (./akts vm)");
  if (state.state != "disabled")
    return errorf(ErrorKind::kBusy, "another sched_ext scheduler is active ('{}', state {}); stop it first",
                  state.ops, state.state);
  was_attached_ = true;
  link_ = bpf_map__attach_struct_ops(skel_->maps.akts_ops);
  if (!link_) {
    int err = errno;
    auto ei = exit_info();
    Error e = sys_error("the kernel refused to register the dispatcher", err);
    e.kind = ErrorKind::kKernel;
    if (!ei.reason.empty()) e.details.push_back(ei.reason + ": " + ei.message);
    return e;
  }
  if (auto st = wait_sched_ext_state("enabled", timeout); !st) {
    auto ei = exit_info();
    Error e = st.error();
    if (ei.kind) e.details.push_back(fmt::format("exit {}: {} {}", ei.kind_name, ei.reason, ei.message));
    bpf_link__destroy(link_);
    link_ = nullptr;
    return e;
  }
  return {};
}

Status ExecutionPlane::detach(std::chrono::milliseconds timeout) {
  if (!link_) return {};
  bpf_link__destroy(link_);
  link_ = nullptr;
  return wait_sched_ext_state("disabled", timeout);
}

Result<std::array<uint64_t, AKTS_MAX_PARAMS>> ExecutionPlane::param_values(uint32_t slot) const {
  if (slot >= AKTS_MAX_SLOTS) return errorf(ErrorKind::kInvalidArgument, "slot {} is out of range", slot);
  if (!params_) return make_error(ErrorKind::kInvalidArgument, "the plane is not loaded");
  std::array<uint64_t, AKTS_MAX_PARAMS> out{};
  for (uint32_t i = 0; i < AKTS_MAX_PARAMS; ++i)
    out[i] = std::atomic_ref<__u64>(params_[slot].v[i]).load(std::memory_order_acquire);
  return out;
}

Status ExecutionPlane::set_param(uint32_t slot, uint32_t index, uint64_t value) {
  bool known = false;
  {
    std::lock_guard lock(policies_mu_);
    for (const auto& p : policies_)
      if (p.slot == slot)
        for (const auto& d : p.params) known = known || (d.index == index && value >= d.min && value <= d.max);
  }
  if (!known) return errorf(ErrorKind::kInvalidArgument, "slot {} has no parameter {} that takes {}", slot, index, value);
  // One aligned 64-bit store through the mapping: a policy reads the old value or the new one.
  std::atomic_ref<__u64>(params_[slot].v[index]).store(value, std::memory_order_release);
  return {};
}

void ExecutionPlane::select(uint32_t slot) {
  std::atomic_ref<uint32_t>(selector_->selected).store(slot, std::memory_order_release);
}

Status ExecutionPlane::set_override(uint32_t word) {
  akts_override_args args{word, 0};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args, .ctx_size_in = sizeof(args));
  if (bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.akts_set_override), &opts) != 0)
    return sys_error("cannot run akts_set_override", errno);
  const int rc = -static_cast<int>(opts.retval);
  if (rc == EBUSY)
    return make_error(ErrorKind::kBusy, "the circuit breaker holds the override word until its trip ends");
  if (rc != 0) return sys_error("akts_set_override failed", rc);
  return {};
}

uint32_t ExecutionPlane::selected() const {
  if (!selector_) return AKTS_SLOT_NONE;  // released after a failed reload
  return std::atomic_ref<uint32_t>(selector_->selected).load(std::memory_order_acquire);
}

uint32_t ExecutionPlane::override_word() const {
  uint32_t zero = 0, word = AKTS_OVERRIDE_OFF;
  if (!skel_) return word;
  (void)bpf_map_lookup_elem(bpf_map__fd(skel_->maps.akts_override), &zero, &word);
  return word;
}

uint32_t ExecutionPlane::effective_slot() const {
  uint32_t ovr = override_word();
  return (ovr & AKTS_OVERRIDE_ACTIVE) ? (ovr & AKTS_OVERRIDE_SLOT_MASK) : selected();
}

volatile uint32_t* ExecutionPlane::selected_word() const { return &selector_->selected; }

Status ExecutionPlane::set_class(uint32_t tgid, uint32_t cls) {
  if (cls >= AKTS_NR_CLASSES) return errorf(ErrorKind::kInvalidArgument, "class {} does not exist", cls);
  if (tgid == 0) return make_error(ErrorKind::kInvalidArgument, "pid 0 cannot be classified");
  if (!skel_) return make_error(ErrorKind::kKernel, "the scheduler is not loaded");
  if (bpf_map_update_elem(classes_map_fd(), &tgid, &cls, BPF_ANY) != 0)
    return sys_error(fmt::format("cannot classify pid {}", tgid), errno);
  return {};
}

Status ExecutionPlane::clear_class(uint32_t tgid) {
  if (!skel_) return make_error(ErrorKind::kKernel, "the scheduler is not loaded");
  if (bpf_map_delete_elem(classes_map_fd(), &tgid) != 0 && errno != ENOENT)
    return sys_error(fmt::format("cannot unclassify pid {}", tgid), errno);
  return {};
}

Status ExecutionPlane::set_hint(uint32_t tid, uint64_t remaining_ns, uint64_t exec_at_ns) {
  if (tid == 0) return make_error(ErrorKind::kInvalidArgument, "thread 0 cannot be hinted");
  if (remaining_ns < AKTS_HINT_MIN_NS || remaining_ns > AKTS_HINT_MAX_NS)
    return errorf(ErrorKind::kInvalidArgument, "an estimate must be from 1us to 3600s, not {} ns", remaining_ns);
  if (!skel_) return make_error(ErrorKind::kKernel, "the scheduler is not loaded");
  akts_hint h{remaining_ns, exec_at_ns};
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.akts_hints), &tid, &h, BPF_ANY) != 0) {
    if (errno == E2BIG)
      return errorf(ErrorKind::kBusy, "cannot hint thread {}: {} threads hold hints already (the most there can be)",
                    tid, AKTS_MAX_HINTS);
    return sys_error(fmt::format("cannot hint thread {}", tid), errno);
  }
  return {};
}

Result<bool> ExecutionPlane::clear_hint(uint32_t tid) {
  if (!skel_) return make_error(ErrorKind::kKernel, "the scheduler is not loaded");
  if (bpf_map_delete_elem(bpf_map__fd(skel_->maps.akts_hints), &tid) == 0) return true;
  if (errno == ENOENT) return false;
  return sys_error(fmt::format("cannot clear the hint of thread {}", tid), errno);
}

Result<std::optional<uint32_t>> ExecutionPlane::get_class(uint32_t tgid) const {
  uint32_t cls = 0;
  if (bpf_map_lookup_elem(classes_map_fd(), &tgid, &cls) == 0) return std::optional<uint32_t>(cls);
  if (errno == ENOENT) return std::optional<uint32_t>();
  return sys_error(fmt::format("cannot read the class of pid {}", tgid), errno);
}

namespace {
// Element 0 of a one-element map (the guard's and the breaker's settings and state), read or written whole.
template <class T>
Status read_first(const bpf_map* m, T& out, std::string_view what) {
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(m), &zero, &out) != 0) return sys_error(fmt::format("cannot read {}", what), errno);
  return {};
}
template <class T>
Status write_first(const bpf_map* m, const T& v, std::string_view what) {
  uint32_t zero = 0;
  if (bpf_map_update_elem(bpf_map__fd(m), &zero, &v, BPF_ANY) != 0)
    return sys_error(fmt::format("cannot write {}", what), errno);
  return {};
}

std::vector<bpf_map*> pinned_maps(akts_dispatcher_bpf* s) {
  std::vector<bpf_map*> maps = {s->maps.akts_selector, s->maps.akts_override, s->maps.akts_stats,
                                s->maps.akts_classes, s->maps.akts_shared, s->maps.akts_guard_params};
  for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) maps.push_back(dispatcher_prog_array(s, cb));
  return maps;
}
}  // namespace

std::vector<std::string> remove_stale_pins(const std::string& bpffs) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(bpffs, ec)) {
    const std::string name = e.path().filename().string();
    static constexpr std::string_view kPrefix = "akts-selftest-";
    if (!name.starts_with(kPrefix)) continue;
    uint32_t pid = 0;
    auto digits = std::string_view(name).substr(kPrefix.size());
    auto [end, perr] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (perr != std::errc() || end != digits.data() + digits.size() || pid == 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its owner lives
    std::error_code rec;
    std::filesystem::remove_all(e.path(), rec);
    if (rec) {
      spdlog::warn("stale pins of a dead process at {}: cannot remove them: {}", e.path().string(), rec.message());
      continue;
    }
    spdlog::warn("removed stale pins of a dead process (pid {}): {}", pid, e.path().string());
    removed.push_back(e.path().string());
  }
  return removed;
}

Status ExecutionPlane::pin(const std::string& dir) {
  for (bpf_map* m : pinned_maps(skel_)) {
    std::string path = dir + "/" + bpf_map__name(m);
    if (int err = bpf_map__pin(m, path.c_str()); err) {
      unpin();
      return sys_error("cannot pin " + path, err);
    }
  }
  return {};
}

void ExecutionPlane::unpin() {
  for (bpf_map* m : pinned_maps(skel_))
    if (bpf_map__is_pinned(m)) bpf_map__unpin(m, nullptr);
}

Result<std::vector<akts_cpu_stats>> ExecutionPlane::read_cpu_stats() const {
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return sys_error("cannot count possible CPUs", ncpus);
  std::vector<akts_cpu_stats> per_cpu(static_cast<size_t>(ncpus));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.akts_stats), &zero, per_cpu.data()) != 0)
    return sys_error("cannot read akts_stats", errno);
  return per_cpu;
}

Result<Stats> ExecutionPlane::read_stats() const {
  auto per_cpu = read_cpu_stats();
  if (!per_cpu) return per_cpu.error();
  return Stats::sum(*per_cpu);
}

Status ExecutionPlane::set_guard(const GuardParams& params) {
  if (params.enabled)
    if (auto st = params.validate(); !st) return st;
  akts_guard_params k = params.to_kernel(), old{};
  if (read_first(skel_->maps.akts_guard_params, old, "")) k.reset_gen = old.reset_gen;
  return write_first(skel_->maps.akts_guard_params, k, "the guard's settings");
}

Result<GuardReport> ExecutionPlane::read_guard() const {
  GuardReport rep;
  akts_guard_params k{};
  if (auto st = read_first(skel_->maps.akts_guard_params, k, "the guard's settings"); !st) return st.error();
  rep.params = GuardParams::from_kernel(k);
  if (auto st = read_first(skel_->maps.akts_guard_state, rep.state, "the guard's state"); !st) return st.error();
  uint32_t zero = 0;
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return sys_error("cannot count possible CPUs", ncpus);
  std::vector<akts_wait_max> per_cpu(static_cast<size_t>(ncpus));
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.akts_wait_max), &zero, per_cpu.data()) != 0)
    return sys_error("cannot read akts_wait_max", errno);
  rep.longest = LongestWaits::max_over(per_cpu);
  return rep;
}

Status ExecutionPlane::set_breaker(const BreakerParams& params) {
  auto g = read_guard();
  if (!g) return g.error();
  // A disarmed breaker never trips: its thresholds need not fit this guard.
  if (params.armed)
    if (auto st = params.validate(g->params); !st) return st;
  return write_first(skel_->maps.akts_breaker_params, params.to_kernel(), "the breaker's settings");
}

Result<BreakerReport> ExecutionPlane::read_breaker() const {
  BreakerReport rep;
  akts_breaker_params k{};
  if (auto st = read_first(skel_->maps.akts_breaker_params, k, "the breaker's settings"); !st) return st.error();
  rep.params = BreakerParams::from_kernel(k);
  if (auto st = read_first(skel_->maps.akts_breaker_state, rep.state, "the breaker's state"); !st) return st.error();
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  rep.now_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  return rep;
}

Status ExecutionPlane::reset_longest_waits() {
  // The timer's worst lateness and run restart too (it zeroes them when it sees the new generation).
  {
    uint32_t zero = 0;
    akts_guard_params k{};
    if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.akts_guard_params), &zero, &k) == 0) {
      ++k.reset_gen;
      (void)bpf_map_update_elem(bpf_map__fd(skel_->maps.akts_guard_params), &zero, &k, BPF_ANY);
    }
  }
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return sys_error("cannot count possible CPUs", ncpus);
  // A wait that ends on another CPU while this runs may survive the reset.
  std::vector<akts_wait_max> zeros(static_cast<size_t>(ncpus));
  uint32_t zero = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.akts_wait_max), &zero, zeros.data(), BPF_ANY) != 0)
    return sys_error("cannot reset akts_wait_max", errno);
  return {};
}

int ExecutionPlane::dispatcher_prog_fd(uint32_t cb) const {
  bpf_program* p = callback_parts(skel_, cb).dispatcher;
  return p ? bpf_program__fd(p) : -1;
}

int ExecutionPlane::tick_prog_fd() const { return bpf_program__fd(skel_->progs.akts_tick); }

Status ExecutionPlane::switch_via_syscall(uint32_t slot, bool kick) {
  akts_switch_args args{slot, kick ? 1u : 0u};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args, .ctx_size_in = sizeof(args));
  if (bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.akts_switch), &opts) != 0)
    return sys_error("cannot run akts_switch", errno);
  if (static_cast<int>(opts.retval) != 0) return sys_error("akts_switch failed", static_cast<int>(opts.retval));
  return {};
}

Result<uint64_t> ExecutionPlane::count_queued() const {
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  if (int err = bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.akts_count_queued), &opts); err)
    return sys_error("cannot run akts_count_queued", errno);
  return static_cast<uint64_t>(std::atomic_ref<u64>(skel_->bss->queued_total).load(std::memory_order_acquire));
}

Result<uint64_t> ExecutionPlane::slot_queued(uint32_t slot) const {
  akts_slot_args args{slot, 0};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args, .ctx_size_in = sizeof(args));
  if (int err = bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.akts_slot_queued), &opts); err)
    return sys_error("cannot run akts_slot_queued", errno);
  if (static_cast<int>(opts.retval) != 0) return sys_error("akts_slot_queued failed", -static_cast<int>(opts.retval));
  return static_cast<uint64_t>(std::atomic_ref<s64>(skel_->bss->slot_queued_total).load(std::memory_order_acquire));
}

ExitInfo ExecutionPlane::exit_info() const {
  ExitInfo ei;
  if (!skel_) return ei;
  const auto& uei = skel_->data->uei;
  ei.kind = std::atomic_ref<int>(const_cast<int&>(uei.kind)).load(std::memory_order_acquire);
  if (!ei.kind) return ei;
  ei.kind_name = kernel_enum_name("scx_exit_kind", ei.kind);
  ei.exit_code = uei.exit_code;
  ei.reason = std::string(uei.reason, strnlen(uei.reason, sizeof(uei.reason)));
  ei.message = std::string(uei.msg, strnlen(uei.msg, sizeof(uei.msg)));
  if (skel_->data_uei_dump)
    ei.dump = std::string(skel_->data_uei_dump->uei_dump, strnlen(skel_->data_uei_dump->uei_dump, UEI_DUMP_DFL_LEN));
  return ei;
}

int ExecutionPlane::prog_array_fd(uint32_t cb) const {
  bpf_map* m = dispatcher_prog_array(skel_, cb);
  return m ? bpf_map__fd(m) : -1;
}

int ExecutionPlane::classes_map_fd() const { return bpf_map__fd(skel_->maps.akts_classes); }
int ExecutionPlane::selector_map_fd() const { return bpf_map__fd(skel_->maps.akts_selector); }

Result<uint32_t> ExecutionPlane::slot_prog_id(uint32_t cb, uint32_t slot) const {
  uint32_t id = 0;
  if (bpf_map_lookup_elem(prog_array_fd(cb), &slot, &id) != 0) {
    if (errno == ENOENT) return 0u;
    return sys_error(fmt::format("cannot read slot {} of the {} array", slot, callback_name(cb)), errno);
  }
  return id;
}

}  // namespace akts
