/* SPDX-License-Identifier: GPL-2.0 */
/*
 * misfit - a policy that verifies but whose dispatch program is bound to the
 * wrong sched_ext_ops member (runnable), so the kernel refuses it in the
 * dispatch prog array after its select_cpu and enqueue programs went in. It
 * exists only so that `akts selftest` can prove the admission's undo path:
 * a slot filled halfway is emptied again. Never part of the library.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(misfit_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	return prev_cpu;
}

void BPF_STRUCT_OPS(misfit_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, 1000000, enq_flags);
}

/* Named for dispatch, bound below to runnable: the dispatch array refuses it. */
void BPF_STRUCT_OPS(misfit_dispatch, struct task_struct *p, u64 enq_flags) {}

SEC(".struct_ops.link")
struct sched_ext_ops misfit_holder = {
	.select_cpu = (void *)misfit_select_cpu,
	.enqueue = (void *)misfit_enqueue,
	.runnable = (void *)misfit_dispatch,
	.name = "akts_misfit",
};
