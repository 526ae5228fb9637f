// What the kernel says about sched_ext under /sys/kernel/sched_ext.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/result.h"

namespace akts {

struct SchedExtState {
  bool supported = false;  // the directory exists: CONFIG_SCHED_CLASS_EXT
  std::string state;       // "disabled", "enabling", "enabled", "disabling"
  std::string ops;         // the active scheduler's name, "" when none
};

SchedExtState read_sched_ext_state();

// Polls until the state is `want` (TCG guests can take over a second).
Status wait_sched_ext_state(const std::string& want, std::chrono::milliseconds timeout);

// /sys/kernel/sched_ext/hotplug_seq, or 0 when absent.
uint64_t read_hotplug_seq();

}  // namespace akts
