#include "exec/standalone.h"

#include <bpf/libbpf.h>

#include <cerrno>

#include "exec/btf_rodata.h"
#include "exec/execution_plane.h"
#include "exec/policy_library.h"
#include "exec/sched_ext_sysfs.h"
#include "exec/skeletons.h"
#include "telemetry/stats.h"

namespace akts {

Result<std::unique_ptr<StandaloneScheduler>> StandaloneScheduler::load(const std::string& build) {
  route_libbpf_logging();
  std::unique_ptr<StandaloneScheduler> s(new StandaloneScheduler());
  Result<std::unique_ptr<PolicyObject>> opened = make_error(ErrorKind::kInvalidArgument, "");
  if (build == "latency")
    opened = AKTS_OPEN_SKELETON(akts_sa_latency_bpf)();
  else if (build == "throughput")
    opened = AKTS_OPEN_SKELETON(akts_sa_throughput_bpf)();
  else if (build == "latency_nocount")
    opened = AKTS_OPEN_SKELETON(akts_sa_latency_nocount_bpf)();
  else
    return errorf(ErrorKind::kInvalidArgument, "no stand-alone build named '{}'", build);
  if (!opened) return opened.error();
  s->obj_ = std::move(opened).value();
  bpf_object* obj = s->obj_->obj();
  if (auto st = init_scx_enums(obj); !st) return st.error();
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS) bpf_map__set_autoattach(map, false);
  }
  if (int err = s->obj_->load(); err) return sys_error("cannot load the stand-alone " + build, err);
  return s;
}

StandaloneScheduler::~StandaloneScheduler() {
  if (link_) (void)detach();
}

Status StandaloneScheduler::attach(std::chrono::milliseconds timeout) {
  auto st = read_sched_ext_state();
  if (st.state != "disabled")
    return errorf(ErrorKind::kBusy, "another sched_ext scheduler is active ('{}')", st.ops);
  bpf_map* ops = bpf_object__find_map_by_name(obj_->obj(), "sa_ops");
  if (!ops) return make_error(ErrorKind::kLoad, "stand-alone object has no sa_ops");
  link_ = bpf_map__attach_struct_ops(ops);
  if (!link_) return sys_error("cannot register the stand-alone scheduler", errno);
  return wait_sched_ext_state("enabled", timeout);
}

Status StandaloneScheduler::detach(std::chrono::milliseconds timeout) {
  if (!link_) return {};
  bpf_link__destroy(link_);
  link_ = nullptr;
  return wait_sched_ext_state("disabled", timeout);
}

int StandaloneScheduler::prog_fd(uint32_t cb) const {
  std::string name = "sa_" + std::string(callback_name(cb));
  bpf_program* p = bpf_object__find_program_by_name(obj_->obj(), name.c_str());
  return p ? bpf_program__fd(p) : -1;
}

}  // namespace akts
