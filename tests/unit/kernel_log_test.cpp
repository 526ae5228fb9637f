#include "telemetry/kernel_log.h"

#include <gtest/gtest.h>

namespace akts {
namespace {

TEST(KernelTrouble, FlagsCrashesAndEjections) {
  EXPECT_TRUE(is_kernel_trouble("Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"));
  EXPECT_TRUE(is_kernel_trouble("BUG: kernel NULL pointer dereference, address: 0000000000000000"));
  EXPECT_TRUE(is_kernel_trouble("WARNING: CPU: 1 PID: 0 at kernel/sched/ext.c:123 foo+0x1/0x2"));
  EXPECT_TRUE(is_kernel_trouble("Kernel panic - not syncing: Fatal exception"));
  EXPECT_TRUE(is_kernel_trouble("sched_ext: BPF scheduler \"akts\" disabled (runtime error)"));
  EXPECT_TRUE(is_kernel_trouble("sched_ext: akts: runnable task stall (kworker/0:1[10] failed to run for 30s)"));
  EXPECT_TRUE(is_kernel_trouble("sched_ext: BPF scheduler \"akts\" disabled (disabled by sysrq-S)"));
}

TEST(KernelTrouble, IgnoresACleanLifecycle) {
  EXPECT_FALSE(is_kernel_trouble("sched_ext: BPF scheduler \"akts\" enabled"));
  EXPECT_FALSE(is_kernel_trouble("sched_ext: BPF scheduler \"akts\" disabled (unregistered from user space)"));
  EXPECT_FALSE(is_kernel_trouble("virtio_blk virtio1: [vda] 2355200 512-byte logical blocks"));
}

}  // namespace
}  // namespace akts
