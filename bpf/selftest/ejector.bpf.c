/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ejector - a candidate that verifies but ends the scheduler when a task of
 * pid 1 is enqueued (scx_bpf_error), and makes itself a queue at dispatch.
 * Built only for tests: admission's static gate must refuse it, naming both
 * kernel functions, before the verifier or the live node ever sees it.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(ejector_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return prev_cpu;
}

void BPF_STRUCT_OPS(ejector_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	if (p->pid == 1)
		scx_bpf_error("ejector: pid 1 enqueued");
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, SCX_SLICE_DFL, enq_flags);
}

void BPF_STRUCT_OPS(ejector_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	scx_bpf_create_dsq(4242, -1);
	scx_bpf_dsq_move_to_local(AKTS_DSQ_BE_FIFO, 0);
}

AKTS_COUNT_ONLY(ejector, runnable)
AKTS_COUNT_ONLY(ejector, running)
AKTS_COUNT_ONLY(ejector, stopping)
AKTS_COUNT_ONLY(ejector, quiescent)

AKTS_POLICY_HOLDER(ejector, ejector);
