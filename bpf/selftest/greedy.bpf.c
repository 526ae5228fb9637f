/* SPDX-License-Identifier: GPL-2.0 */
/*
 * greedy - a policy that tries every way the contract allows to starve tasks,
 * built only for `akts selftest` to show that the frame's bounded-wait guard,
 * not the policy, keeps every task running. Never part of the library.
 *
 * It gives every task an infinite slice, refills the running task's slice in
 * dispatch so it never yields, drains only its own queue (never what another
 * policy left behind) and never dispatches while prev can go on. Without the
 * guard, every task but one on a CPU waits until the kernel's watchdog ejects
 * the scheduler.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(greedy_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return prev_cpu;
}

void BPF_STRUCT_OPS(greedy_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, SCX_SLICE_INF, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(greedy_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		prev->scx.slice = SCX_SLICE_INF;
		return;
	}
	scx_bpf_dsq_move_to_local(AKTS_DSQ_BE_FIFO, 0);
}

AKTS_COUNT_ONLY(greedy, runnable)

void BPF_STRUCT_OPS(greedy_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	p->scx.slice = SCX_SLICE_INF;
}

AKTS_COUNT_ONLY(greedy, stopping)
AKTS_COUNT_ONLY(greedy, quiescent)

AKTS_POLICY_HOLDER(greedy, greedy);
