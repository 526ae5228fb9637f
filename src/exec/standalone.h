// A policy loaded as a scheduler of its own (bpf/standalone/), for the
// benchmark that prices the dispatcher against it like for like.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/result.h"

struct bpf_link;
struct bpf_object;

namespace akts {

class PolicyObject;

class StandaloneScheduler {
 public:
  // Builds compiled in: "latency", "throughput", "latency_nocount" (no counters).
  static Result<std::unique_ptr<StandaloneScheduler>> load(const std::string& build);
  ~StandaloneScheduler();

  Status attach(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  Status detach(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Its program for a dispatched callback (enum akts_callback).
  int prog_fd(uint32_t cb) const;

 private:
  StandaloneScheduler() = default;
  std::unique_ptr<PolicyObject> obj_;
  bpf_link* link_ = nullptr;
};

}  // namespace akts
