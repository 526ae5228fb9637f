// `akts daemon`'s checks before anything is loaded: sched_ext is there and free, the initial slot names a
// configured policy, the socket's group exists and the audit log opens. A mistake here changes nothing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "config/daemon_config.h"
#include "control/audit.h"

namespace akts {

struct Preflight {
  uint32_t initial_slot = 0;
  gid_t socket_gid = static_cast<gid_t>(-1);  // -1: the socket keeps the daemon's group
  std::unique_ptr<control::AuditLog> audit;   // null: none configured
};

// 0 with `out` filled, or the exit status (1: the kernel's state; 2: the configuration), said in the log.
int preflight(const DaemonConfig& cfg, Preflight& out);

}  // namespace akts
