/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lc_starver - a policy that starves the latency-critical class on purpose,
 * built only for `akts selftest` to show that the frame's circuit breaker
 * takes the CPUs back from it before the guard or the kernel's watchdog has
 * to. Never part of the library.
 *
 * It queues LC tasks in the shared LC FIFO and never drains it (nor anything
 * another policy left behind: it breaks the hand-off too); BE tasks get
 * ordinary 5 ms slices from the BE FIFO. Left alone, an LC task runs only
 * when the guard rescues it, once per max_wait.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(lc_starver_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return prev_cpu;
}

void BPF_STRUCT_OPS(lc_starver_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	if (akts_task_class(p) == AKTS_CLASS_LC) {
		scx_bpf_dsq_insert(p, AKTS_DSQ_LC_FIFO, 5000000, enq_flags);
		return;
	}
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, 5000000, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(lc_starver_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	scx_bpf_dsq_move_to_local(AKTS_DSQ_BE_FIFO, 0);
}

AKTS_COUNT_ONLY(lc_starver, runnable)
AKTS_COUNT_ONLY(lc_starver, running)
AKTS_COUNT_ONLY(lc_starver, stopping)
AKTS_COUNT_ONLY(lc_starver, quiescent)

AKTS_POLICY_HOLDER(lc_starver, lc_starver);
