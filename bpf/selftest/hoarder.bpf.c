/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hoarder - a policy that keeps every task in its CPU's local DSQ (at the
 * tail, as the contract allows) with an infinite slice and refills the
 * running task's slice in dispatch, so a local DSQ never drains by itself.
 * Built only for `akts selftest`: local DSQs cannot be walked, and this shows
 * that the frame's per-CPU check alone keeps their tasks running. Never part
 * of the library.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(hoarder_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return prev_cpu;
}

void BPF_STRUCT_OPS(hoarder_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_INF, enq_flags & ~(u64)(SCX_ENQ_HEAD | SCX_ENQ_PREEMPT));
}

void BPF_STRUCT_OPS(hoarder_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED))
		prev->scx.slice = SCX_SLICE_INF;
}

AKTS_COUNT_ONLY(hoarder, runnable)
AKTS_COUNT_ONLY(hoarder, running)
AKTS_COUNT_ONLY(hoarder, stopping)
AKTS_COUNT_ONLY(hoarder, quiescent)

AKTS_POLICY_HOLDER(hoarder, hoarder);
