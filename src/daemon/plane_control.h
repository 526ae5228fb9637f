// What the daemon's jobs ask of the execution plane, as an interface: the canary and the restart path drive the
// real plane in the daemon and a fake one in host tests (tests/unit/daemon_jobs_test.cpp). Those jobs need no
// BPF library (they are in akts_core, and their tests run under ASan too); ExecutionPlaneControl is inline, so
// only the daemon, which links the execution plane, instantiates it.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "exec/execution_plane.h"
#include "safety/breaker.h"

namespace akts {

class PlaneControl {
 public:
  virtual ~PlaneControl() = default;
  virtual uint32_t selected() const = 0;
  virtual Result<BreakerReport> read_breaker() const = 0;
  virtual Status set_breaker(const BreakerParams& params) = 0;
  virtual Status evict(uint32_t slot) = 0;
  // Loads the library again after the kernel ended the scheduler (ExecutionPlane::reload), then attaches it.
  virtual Status reload(const PlaneOptions& opts) = 0;
  virtual Status attach() = 0;
};

// The real one: each call goes to the execution plane.
class ExecutionPlaneControl final : public PlaneControl {
 public:
  explicit ExecutionPlaneControl(ExecutionPlane& plane) : plane_(plane) {}
  uint32_t selected() const override { return plane_.selected(); }
  Result<BreakerReport> read_breaker() const override { return plane_.read_breaker(); }
  Status set_breaker(const BreakerParams& params) override { return plane_.set_breaker(params); }
  Status evict(uint32_t slot) override { return plane_.evict(slot); }
  Status reload(const PlaneOptions& opts) override { return plane_.reload(opts); }
  Status attach() override { return plane_.attach(); }

 private:
  ExecutionPlane& plane_;
};

}  // namespace akts
