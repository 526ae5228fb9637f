// Setting a BPF object's read-only globals (`const volatile` knobs) by name,
// before load, through its BTF: one generic path for every object, whatever
// its skeleton type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

struct bpf_object;

namespace akts {

// Writes `size` bytes into the .rodata variable `name`; the sizes must match.
Status set_rodata(bpf_object* obj, std::string_view name, const void* data, size_t size);

// The bytes of the .rodata variable `name` as the object holds them before
// load; nullopt when the object declares no such variable.
Result<std::optional<std::string>> get_rodata(bpf_object* obj, std::string_view name);

template <typename T>
Status set_rodata_value(bpf_object* obj, std::string_view name, T value) {
  return set_rodata(obj, name, &value, sizeof(value));
}

// Fills every `__SCX_*` enum constant the object declares (scx/enums.autogen.bpf.h)
// with the running kernel's value, read from its BTF. Must run before load: the
// sched_ext headers resolve SCX_DSQ_LOCAL, SCX_SLICE_DFL, ... through them.
Status init_scx_enums(bpf_object* obj);

// Name of a kernel enum value by prefix, from the running kernel's BTF,
// The name of `value` among the enumerators of one enum type of the running
// kernel, e.g. kernel_enum_name("scx_exit_kind", 64) == "SCX_EXIT_UNREG" (never
// another enum's SCX_EXIT_* constant of the same value); "" if unknown.
std::string kernel_enum_name(std::string_view enum_type, int64_t value);

// Value of a kernel enumerator by name (e.g. "SCX_OPS_SWITCH_PARTIAL").
Result<int64_t> kernel_enum_value(std::string_view name);

}  // namespace akts
