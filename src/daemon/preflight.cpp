// `akts daemon`'s checks before anything is loaded, and the lookups they need (a group, the initial slot).
#include "daemon/preflight.h"

#include <grp.h>

#include <cerrno>
#include <charconv>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/parse.h"
#include "exec/sched_ext_sysfs.h"

namespace akts {
namespace {

// A group by number or name, or why not.
Result<gid_t> group_id(const std::string& name) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec == std::errc() && end == name.data() + name.size()) {
    if (n == UINT32_MAX) return errorf(ErrorKind::kInvalidArgument, "socket_group {} is not a group", name);
    return static_cast<gid_t>(n);
  }
  std::vector<char> buf(16384);
  for (int tries = 0; tries < 8; ++tries, buf.resize(buf.size() * 4)) {
    group g{};
    group* out = nullptr;
    int rc = getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &out);
    if (rc == ERANGE) continue;
    if (rc != 0) return sys_error("socket_group " + name, rc);
    if (!out) return errorf(ErrorKind::kInvalidArgument, "socket_group {}: no such group on this system", name);
    return out->gr_gid;
  }
  return errorf(ErrorKind::kSystem, "socket_group {}: its entry is too large to read", name);
}

Result<uint32_t> initial_slot(const DaemonConfig& cfg) {
  for (size_t i = 0; i < cfg.policies.size(); ++i)
    if (cfg.policies[i] == cfg.initial) return static_cast<uint32_t>(i);
  auto n = parse_u32(cfg.initial, "initial");
  if (!n || *n >= cfg.policies.size())
    return errorf(ErrorKind::kInvalidArgument, "initial: '{}' is not a configured policy or slot", cfg.initial);
  return *n;
}

}  // namespace

int preflight(const DaemonConfig& cfg, Preflight& out) {
  auto state = read_sched_ext_state();
  if (!state.supported) {
    spdlog::error("this kernel has no sched_ext (/sys/kernel/sched_ext is missing)");
    return 1;
  }
  if (state.state != "disabled") {
    spdlog::error("another sched_ext scheduler is active: '{}' ({}); stop it first", state.ops, state.state);
    return 1;
  }
  auto slot = initial_slot(cfg);
  if (!slot) {
    spdlog::error("{}", slot.error().to_string());
    return 2;
  }
  out.initial_slot = *slot;
  if (!cfg.socket_group.empty()) {
    auto g = group_id(cfg.socket_group);
    if (!g) {
      spdlog::error("{}", g.error().to_string());
      return 2;
    }
    out.socket_gid = *g;
  }
  if (!cfg.audit_log.empty()) {
    auto a = control::AuditLog::open(cfg.audit_log);
    if (!a) {
      spdlog::error("{} (set \"audit_log\": \"\" to run without one)", a.error().to_string());
      return 2;
    }
    out.audit = std::move(*a);
  }
  return 0;
}

}  // namespace akts
