#include "exec/btf_rodata.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/log.h"

namespace akts {
namespace {

bpf_map* find_rodata_map(bpf_object* obj) {
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    std::string_view n = bpf_map__name(map);
    if (n.size() >= 7 && n.substr(n.size() - 7) == ".rodata") return map;
  }
  return nullptr;
}

// Calls fn(name, offset, size) for each variable of the .rodata section.
Status for_each_rodata_var(bpf_object* obj,
                           const std::function<void(std::string_view, uint32_t, uint32_t)>& fn) {
  const btf* b = bpf_object__btf(obj);
  if (!b) return make_error(ErrorKind::kLoad, "BPF object has no BTF");
  int id = btf__find_by_name_kind(b, ".rodata", BTF_KIND_DATASEC);
  if (id < 0) return {};  // no knobs at all
  const btf_type* sec = btf__type_by_id(b, id);
  const btf_var_secinfo* vsi = btf_var_secinfos(sec);
  for (unsigned i = 0; i < btf_vlen(sec); ++i, ++vsi) {
    const btf_type* var = btf__type_by_id(b, vsi->type);
    fn(btf__name_by_offset(b, var->name_off), vsi->offset, vsi->size);
  }
  return {};
}

struct KernelEnums {
  std::unordered_map<std::string, int64_t> values;  // enumerator name -> value
  // enum type name -> its enumerators, in declaration order
  std::unordered_map<std::string, std::vector<std::pair<std::string, int64_t>>> by_type;
};

// Every enumerator in the running kernel's BTF, by name and by enum type.
const KernelEnums* kernel_enums(Error* err) {
  static std::once_flag once;
  static KernelEnums enums;
  static Error load_error;
  static bool ok = false;
  std::call_once(once, [] {
    btf* vmlinux = btf__load_vmlinux_btf();
    if (!vmlinux) {
      load_error = sys_error("cannot read the running kernel's BTF (/sys/kernel/btf/vmlinux)", errno);
      return;
    }
    for (uint32_t id = 1; id < btf__type_cnt(vmlinux); ++id) {
      const btf_type* t = btf__type_by_id(vmlinux, id);
      auto& members = enums.by_type[btf__name_by_offset(vmlinux, t->name_off)];
      if (btf_is_enum(t)) {
        const struct btf_enum* e = btf_enum(t);
        for (unsigned i = 0; i < btf_vlen(t); ++i, ++e) {
          int64_t v = btf_kflag(t) ? int64_t(e->val) : int64_t(uint32_t(e->val));
          enums.values.emplace(btf__name_by_offset(vmlinux, e->name_off), v);
          members.emplace_back(btf__name_by_offset(vmlinux, e->name_off), v);
        }
      } else if (btf_is_enum64(t)) {
        const struct btf_enum64* e = btf_enum64(t);
        for (unsigned i = 0; i < btf_vlen(t); ++i, ++e) {
          int64_t v = int64_t(btf_enum64_value(e));
          enums.values.emplace(btf__name_by_offset(vmlinux, e->name_off), v);
          members.emplace_back(btf__name_by_offset(vmlinux, e->name_off), v);
        }
      }
    }
    btf__free(vmlinux);
    ok = true;
  });
  if (!ok) {
    *err = load_error;
    return nullptr;
  }
  return &enums;
}

}  // namespace

Status set_rodata(bpf_object* obj, std::string_view name, const void* data, size_t size) {
  bpf_map* map = find_rodata_map(obj);
  if (!map) return errorf(ErrorKind::kInvalidArgument, "{}: object has no .rodata", name);
  size_t total = 0;
  auto* base = static_cast<char*>(bpf_map__initial_value(map, &total));
  if (!base) return errorf(ErrorKind::kLoad, "{}: .rodata is not writable (already loaded?)", name);
  bool found = false;
  Status st;
  auto s = for_each_rodata_var(obj, [&](std::string_view var, uint32_t off, uint32_t sz) {
    if (var != name || found) return;
    found = true;
    if (sz != size || uint64_t{off} + sz > total)  // 64-bit: an object's own BTF could wrap 32
      st = errorf(ErrorKind::kInvalidArgument, "{}: size {} does not match the variable's {}", name, size, sz);
    else
      std::memcpy(base + off, data, size);
  });
  if (!s) return s;
  if (!found) return errorf(ErrorKind::kInvalidArgument, "no knob named '{}' in this object", name);
  return st;
}

Result<std::optional<std::string>> get_rodata(bpf_object* obj, std::string_view name) {
  bpf_map* map = find_rodata_map(obj);
  if (!map) return std::optional<std::string>();
  size_t total = 0;
  const auto* base = static_cast<const char*>(bpf_map__initial_value(map, &total));
  if (!base) return errorf(ErrorKind::kLoad, "{}: .rodata cannot be read (already loaded?)", name);
  std::optional<std::string> out;
  Status st;
  auto s = for_each_rodata_var(obj, [&](std::string_view var, uint32_t off, uint32_t sz) {
    if (var != name || out) return;
    if (uint64_t{off} + sz > total)  // 64-bit: a hostile object's BTF could wrap 32
      st = errorf(ErrorKind::kLoad, "{}: the variable lies outside .rodata", name);
    else
      out = std::string(base + off, sz);
  });
  if (!s) return s.error();
  if (!st) return st.error();
  return out;
}

Status init_scx_enums(bpf_object* obj) {
  Error err;
  const auto* enums = kernel_enums(&err);
  if (!enums) return err;
  std::vector<std::string> wanted;
  auto s = for_each_rodata_var(obj, [&](std::string_view var, uint32_t, uint32_t sz) {
    if (var.starts_with("__SCX_") && sz == sizeof(uint64_t)) wanted.emplace_back(var);
  });
  if (!s) return s;
  for (const auto& var : wanted) {
    auto it = enums->values.find(var.substr(2));
    uint64_t v = 0;
    if (it != enums->values.end())
      v = static_cast<uint64_t>(it->second);
    else
      spdlog::debug("kernel has no enum {}; using 0", var.substr(2));
    if (auto st = set_rodata_value(obj, var, v); !st) return st;
  }
  return {};
}

std::string kernel_enum_name(std::string_view enum_type, int64_t value) {
  Error err;
  const auto* enums = kernel_enums(&err);
  if (!enums) return "";
  auto it = enums->by_type.find(std::string(enum_type));
  if (it == enums->by_type.end()) return "";
  for (const auto& [name, v] : it->second)
    if (v == value) return name;
  return "";
}

Result<int64_t> kernel_enum_value(std::string_view name) {
  Error err;
  const auto* enums = kernel_enums(&err);
  if (!enums) return err;
  auto it = enums->values.find(std::string(name));
  if (it == enums->values.end()) return errorf(ErrorKind::kUnsupported, "the running kernel has no {}", name);
  return it->second;
}

}  // namespace akts
