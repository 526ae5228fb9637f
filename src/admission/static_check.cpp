// Gate 2: reads a BPF object's sections, symbols and relocations, and judges its programs and calls.
#include "admission/static_check.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "admission/record.h"
#include "common/text.h"
#include "repository/policy_repository.h"

namespace akts::admission {
namespace {

using json = nlohmann::json;

constexpr const char* kCallbacks[] = {"select_cpu", "enqueue",  "dispatch",  "runnable",
                                      "running",    "stopping", "quiescent"};

// The contract's kernel functions (what the library and the frame's helpers use, and their kin).
const std::set<std::string, std::less<>> kAllowedKfuncs = {
    "scx_bpf_select_cpu_dfl", "scx_bpf_select_cpu_and", "__scx_bpf_select_cpu_and", "scx_bpf_dsq_insert", "scx_bpf_dsq_insert_vtime",
    "__scx_bpf_dsq_insert_vtime", "scx_bpf_dispatch", "scx_bpf_dispatch_vtime", "scx_bpf_dsq_move_to_local",
    "scx_bpf_dsq_move", "scx_bpf_dsq_move_set_slice",  // to a CPU's local DSQ (akts.h, Queues: central)
    "scx_bpf_dispatch_from_dsq", "scx_bpf_dispatch_from_dsq_set_slice",  // their older names (compat)
    "scx_bpf_consume", "scx_bpf_kick_cpu", "scx_bpf_dsq_nr_queued", "scx_bpf_dsq_peek", "bpf_iter_scx_dsq_new",
    "bpf_iter_scx_dsq_next", "bpf_iter_scx_dsq_destroy", "bpf_iter_num_new", "bpf_iter_num_next",
    "bpf_iter_num_destroy", "scx_bpf_pick_idle_cpu", "scx_bpf_pick_any_cpu", "scx_bpf_test_and_clear_cpu_idle",
    "scx_bpf_get_idle_cpumask", "scx_bpf_get_idle_smtmask", "scx_bpf_put_idle_cpumask",
    "scx_bpf_get_online_cpumask", "scx_bpf_get_possible_cpumask", "scx_bpf_put_cpumask", "bpf_cpumask_test_cpu",
    "bpf_cpumask_first", "bpf_cpumask_weight", "scx_bpf_task_cpu", "scx_bpf_task_running", "scx_bpf_now",
    "scx_bpf_nr_cpu_ids", "scx_bpf_nr_node_ids", "scx_bpf_cpu_node", "scx_bpf_task_set_dsq_vtime",
    "scx_bpf_task_set_slice", "scx_bpf_cpuperf_cap", "scx_bpf_cpuperf_cur",
    // Reading which task a CPU runs (preempt's victim check; akts_kfunc_compat.bpf.h's __COMPAT_scx_bpf_cpu_curr).
    "scx_bpf_cpu_curr", "scx_bpf_cpu_rq"};

// Refused with a reason (the rest of what is not allowed is refused as "not in the contract").
const std::map<std::string, std::string, std::less<>> kRefusedKfuncs = {
    {"scx_bpf_create_dsq", "queues belong to the frame: a policy may not create one"},
    {"scx_bpf_destroy_dsq", "queues belong to the frame: a policy may not destroy one"},
    {"scx_bpf_error_bstr", "a policy may not end the scheduler"},
    {"scx_bpf_exit_bstr", "a policy may not end the scheduler"},
    {"scx_bpf_dump_bstr", "a policy may not write the scheduler's exit dump"},
    {"scx_bpf_dsq_move_vtime", "moving tasks between queues is the frame's hand-off"},
    {"scx_bpf_dsq_move_set_vtime", "moving tasks between queues is the frame's hand-off"},
    {"scx_bpf_reenqueue_local", "re-enqueueing is the frame's hand-off"},
    {"bpf_task_acquire", "a policy may hold no task reference (tail calls forbid it)"},
    {"bpf_task_from_pid", "a policy may hold no task reference (tail calls forbid it)"},
    {"bpf_task_release", "a policy may hold no task reference (tail calls forbid it)"},
};

// Extern variables an object may name (libbpf resolves them): not kernel functions.
const std::set<std::string, std::less<>> kExternVars = {"LINUX_KERNEL_VERSION", "LINUX_HAS_BPF_COOKIE",
                                                         "CONFIG_HZ",
                                                         // the per-CPU run queues, read for a CPU's current task
                                                         // where the kernel has no scx_bpf_cpu_curr (compat)
                                                         "runqueues"};

const std::map<int, std::string> kAllowedHelpers = {
    {1, "map_lookup_elem"},       {2, "map_update_elem"},  {3, "map_delete_elem"},   {5, "ktime_get_ns"},
    {6, "trace_printk"},          {7, "get_prandom_u32"},  {8, "get_smp_processor_id"}, {14, "get_current_pid_tgid"},
    {93, "spin_lock"},            {94, "spin_unlock"},     {113, "probe_read_kernel"}, {125, "ktime_get_boot_ns"},
    {153, "per_cpu_ptr"},         {156, "task_storage_get"},    {157, "task_storage_delete"}, {158, "get_current_task_btf"}, {181, "loop"}};

const std::map<int, std::string> kRefusedHelpers = {
    {12, "tail_call: a policy runs inside the frame's tail call and may not chain others"},
    {36, "probe_write_user: writes user memory"},
    {58, "override_return"},
    {109, "send_signal"},
    {117, "send_signal_thread"},
    {169, "timer_init: a policy's timer would keep firing while another policy runs"},
    {170, "timer_set_callback: as timer_init"},
    {171, "timer_start: as timer_init"},
};

std::string strip_flavor(std::string_view name) {
  size_t f = name.find("___");
  return std::string(f == std::string_view::npos ? name : name.substr(0, f));
}

// An ELF handle over bytes in memory (elf_memory: no descriptor), ended with its owner.
struct Elf_ {
  Elf* elf = nullptr;
  ~Elf_() {
    if (elf) elf_end(elf);
  }
};

}  // namespace

json StaticReport::to_json() const {
  json f = json::array();
  for (const auto& x : findings) f.push_back({{"rule", x.rule}, {"ok", x.ok}, {"detail", x.detail}});
  return {{"gate", "static"}, {"passed", passed}, {"policy", policy}, {"findings", f}, {"evidence", evidence}};
}

Result<StaticReport> check_object(const std::string& path, const StaticLimits& limits) {
  auto bytes = read_regular_file(path, kMaxObjectBytes);
  if (!bytes) return bytes.error();
  return check_bytes(*bytes, path, limits);
}

Result<StaticReport> check_bytes(std::string_view bytes, const std::string& path, const StaticLimits& limits) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(ErrorKind::kSystem, "libelf is unusable");
  std::string copy(bytes);  // elf_memory wants a mutable buffer, alive until elf_end (e's destructor, before this)
  Elf_ e;
  e.elf = elf_memory(copy.data(), copy.size());
  GElf_Ehdr eh;
  if (!e.elf || elf_kind(e.elf) != ELF_K_ELF || !gelf_getehdr(e.elf, &eh))
    return errorf(ErrorKind::kInvalidArgument, "{} is not an ELF object", path);
  if (eh.e_machine != EM_BPF || eh.e_type != ET_REL)
    return errorf(ErrorKind::kInvalidArgument, "{} is not a BPF object file (machine {}, type {})", path, eh.e_machine,
                  eh.e_type);
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(e.elf, &shstrndx) != 0) return errorf(ErrorKind::kInvalidArgument, "{}: no section names", path);

  struct Section {
    std::string name;
    GElf_Shdr hdr;
    Elf_Data* data;
  };
  std::map<size_t, Section> sections;
  size_t symtab = 0;
  for (Elf_Scn* scn = elf_nextscn(e.elf, nullptr); scn; scn = elf_nextscn(e.elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* n = elf_strptr(e.elf, shstrndx, sh.sh_name);
    sections[elf_ndxscn(scn)] = {n ? n : "", sh, elf_getdata(scn, nullptr)};
    if (sh.sh_type == SHT_SYMTAB) symtab = elf_ndxscn(scn);
  }
  if (!symtab) return errorf(ErrorKind::kInvalidArgument, "{}: no symbol table", path);
  const Section& st = sections[symtab];
  auto symbol = [&](size_t i, GElf_Sym* sym) -> std::string {
    if (!st.data || !gelf_getsym(st.data, static_cast<int>(i), sym)) return "";
    const char* n = elf_strptr(e.elf, st.hdr.sh_link, sym->st_name);
    return n ? n : "";
  };

  StaticReport rep;
  Finding programs{"programs", true, ""}, budget{"budget", true, ""}, kfuncs{"kfuncs", true, ""},
      helpers{"helpers", true, ""}, queues{"queues", true, ""};
  std::vector<std::string> problems_programs, problems_kfuncs, problems_helpers, problems_queues;
  json progs = json::array();
  std::set<std::string> seen_cb, prefixes, kfunc_names, helper_names;
  size_t total = 0;
  bool holder = false;

  // Program sections, their sizes and their callbacks.
  for (const auto& [idx, s] : sections) {
    if (s.name == ".struct_ops.link" || s.name == ".struct_ops") holder = true;
    if (s.hdr.sh_type != SHT_PROGBITS || !(s.hdr.sh_flags & SHF_EXECINSTR)) continue;
    size_t insns = s.hdr.sh_size / 8;
    total += insns;
    if (s.name == ".text") {
      if (insns) progs.push_back({{"section", s.name}, {"callback", "subprograms"}, {"insns", insns}});
      continue;
    }
    if (s.name == "fentry/bpf_scx_reg") {  // scx/common.bpf.h's scx_lib_init_probe
      progs.push_back({{"section", s.name}, {"callback", "scx library probe"}, {"insns", insns}});
      continue;
    }
    if (insns > limits.max_insns_per_program) {
      budget.ok = false;
      budget.detail += fmt::format("{}{} has {} instructions (at most {})", budget.detail.empty() ? "" : "; ", s.name,
                                   insns, limits.max_insns_per_program);
    }
    static constexpr std::string_view kPrefix = "struct_ops/";
    if (s.name.rfind(kPrefix, 0) != 0) {
      problems_programs.push_back(fmt::format("section {} is not a struct_ops program of a dispatched callback", s.name));
      progs.push_back({{"section", s.name}, {"callback", nullptr}, {"insns", insns}});
      continue;
    }
    std::string prog = s.name.substr(kPrefix.size());
    std::string cb;
    for (const char* c : kCallbacks) {
      std::string suffix = std::string("_") + c;
      if (prog.size() > suffix.size() && prog.compare(prog.size() - suffix.size(), suffix.size(), suffix) == 0) {
        cb = c;
        prefixes.insert(prog.substr(0, prog.size() - suffix.size()));
      }
    }
    progs.push_back({{"section", s.name}, {"callback", cb.empty() ? json(nullptr) : json(cb)}, {"insns", insns}});
    if (cb.empty()) {
      problems_programs.push_back(
          fmt::format("{} is not named <policy>_<callback> for a dispatched callback ({})", prog, fmt::join(kCallbacks, ", ")));
    } else if (!seen_cb.insert(cb).second) {
      problems_programs.push_back(fmt::format("two programs for {}", cb));
    }
  }
  if (seen_cb.empty()) problems_programs.push_back("no program for any dispatched callback");
  if (prefixes.size() > 1) problems_programs.push_back(fmt::format("programs of several policies: {}", fmt::join(prefixes, ", ")));
  for (const auto& p : prefixes)
    if (!valid_policy_name(p))
      problems_programs.push_back(fmt::format("the programs' prefix '{}' is not a policy name ([a-z][a-z0-9_]*, at most 32)",
                                              excerpt(valid_utf8(p))));
  if (!holder) problems_programs.push_back("no holder map (.struct_ops.link) names the programs");
  if (total > limits.max_insns_total) {
    budget.ok = false;
    budget.detail += fmt::format("{}{} instructions in all (at most {})", budget.detail.empty() ? "" : "; ", total,
                                 limits.max_insns_total);
  }
  if (budget.ok) budget.detail = fmt::format("{} instructions in all (at most {}; {} a program)", total,
                                             limits.max_insns_total, limits.max_insns_per_program);

  // Every extern the object names (calls and ksym_exists checks alike).
  auto judge_kfunc = [&](const std::string& raw) {
    std::string name = strip_flavor(raw);
    if (kExternVars.count(name) || name.rfind("CONFIG_", 0) == 0) return;
    kfunc_names.insert(name);
    if (auto it = kRefusedKfuncs.find(name); it != kRefusedKfuncs.end()) {
      problems_kfuncs.push_back(fmt::format("{}: {}", name, it->second));
      if (name == "scx_bpf_create_dsq" || name == "scx_bpf_destroy_dsq") problems_queues.push_back(name + ": " + it->second);
    } else if (!kAllowedKfuncs.count(name)) {
      problems_kfuncs.push_back(fmt::format("{} is not in the contract's kernel functions", name));
    }
  };
  size_t nsyms = st.hdr.sh_entsize ? st.hdr.sh_size / st.hdr.sh_entsize : 0;
  for (size_t i = 1; i < nsyms; ++i) {
    GElf_Sym sym;
    std::string n = symbol(i, &sym);
    if (sym.st_shndx == SHN_UNDEF && !n.empty()) judge_kfunc(n);
  }

  // Helper calls: call instructions with no relocation (a relocated call is a kfunc or a subprogram).
  for (const auto& [idx, s] : sections) {
    if (s.hdr.sh_type != SHT_PROGBITS || !(s.hdr.sh_flags & SHF_EXECINSTR) || !s.data) continue;
    std::set<size_t> relocated;
    for (const auto& [ridx, r] : sections) {
      // Only what libbpf applies: ".rel" + the section's name (it ignores .rel.debug_* and the like).
      if (r.hdr.sh_type != SHT_REL || r.hdr.sh_info != idx || !r.data || r.name != ".rel" + s.name) continue;
      size_t n = r.hdr.sh_entsize ? r.hdr.sh_size / r.hdr.sh_entsize : 0;
      for (size_t k = 0; k < n; ++k) {
        GElf_Rel rel;
        if (gelf_getrel(r.data, static_cast<int>(k), &rel)) relocated.insert(rel.r_offset / 8);
      }
    }
    const auto* code = static_cast<const unsigned char*>(s.data->d_buf);
    size_t n = s.data->d_size / 8;
    for (size_t k = 0; k < n; ++k) {
      const unsigned char* insn = code + 8 * k;
      uint8_t op = insn[0], src = insn[1] >> 4;
      int32_t imm;
      std::memcpy(&imm, insn + 4, 4);
      if (op != 0x85 || relocated.count(k)) continue;  // BPF_JMP | BPF_CALL
      if (src == 2) {  // a kernel function by BTF id, naming nothing the kfunc rule could judge
        problems_kfuncs.push_back(fmt::format("{} calls a kernel function by BTF id {} (no name to check)", s.name, imm));
        continue;
      }
      if (src != 0) continue;  // a call of a subprogram in the same section
      auto ok = kAllowedHelpers.find(imm);
      if (ok != kAllowedHelpers.end()) {
        helper_names.insert(ok->second);
      } else if (auto bad = kRefusedHelpers.find(imm); bad != kRefusedHelpers.end()) {
        helper_names.insert(fmt::format("#{}", imm));
        problems_helpers.push_back(fmt::format("{} calls helper #{} {}", s.name, imm, bad->second));
      } else {
        helper_names.insert(fmt::format("#{}", imm));
        problems_helpers.push_back(fmt::format("{} calls helper #{}, not in the contract's helpers", s.name, imm));
      }
    }
  }

  auto close = [](Finding& f, std::vector<std::string>& problems, std::string good) {
    std::sort(problems.begin(), problems.end());
    problems.erase(std::unique(problems.begin(), problems.end()), problems.end());
    f.ok = problems.empty();
    f.detail = f.ok ? std::move(good) : fmt::format("{}", fmt::join(problems, "; "));
  };
  close(programs, problems_programs,
        fmt::format("{} callback program(s) of policy {}: {}", seen_cb.size(), prefixes.empty() ? "?" : *prefixes.begin(),
                    fmt::join(seen_cb, ", ")));
  close(kfuncs, problems_kfuncs, fmt::format("{} kernel function(s), all in the contract", kfunc_names.size()));
  close(helpers, problems_helpers, fmt::format("{}", fmt::join(helper_names, ", ")));
  close(queues, problems_queues, "creates and destroys no DSQ (the ids it uses are checked at run time)");
  rep.findings = {programs, budget, kfuncs, helpers, queues};
  rep.passed = std::all_of(rep.findings.begin(), rep.findings.end(), [](const Finding& f) { return f.ok; });
  rep.policy = prefixes.size() == 1 ? *prefixes.begin() : "";
  rep.evidence = {{"programs", progs},
                  {"kfuncs", std::vector<std::string>(kfunc_names.begin(), kfunc_names.end())},
                  {"helpers", std::vector<std::string>(helper_names.begin(), helper_names.end())},
                  {"insns_total", total}};
  return rep;
}

}  // namespace akts::admission
