/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ljf - longest job first, for batch makespan.
 *
 * What it does: one queue of its own ordered by the CPU time each task has
 * used so far (its sum_exec_runtime when queued), most first: the job that
 * has run longest, taken as the longest, goes first and keeps its CPU for a
 * long slice (`slice`, 20 ms by default). Short and new tasks run when the
 * long ones block or a CPU is idle. SchedCP's example policy for batch
 * makespan: long jobs start early and do not become the tail.
 *
 * Limits: it has no size estimate, only the time used so far (a long job
 * that just started looks short); short work, LC work included, starves
 * behind CPU-bound jobs until the frame's bounded-wait guard rescues it, and
 * the circuit breaker trips on an LC wait: never pick it while LC work runs.
 * Nice weights are not applied. Its order key is its own (the kernel keeps
 * it in p->scx.dsq_vtime); the fair virtual time of the other policies is
 * kept apart and not disturbed.
 *
 * When to pick it: batch-only periods where the makespan of a set of jobs
 * matters, with no LC work waiting.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 20000000, 100000, 100000000, "ns",
		       "the slice every task gets; long, for warm caches"));
#define slice_ns akts_param(0)

/* Keys near 2^62 minus the CPU time used: within 2^63 of each other, as vtime comparisons need. */
#define LJF_KEY_BASE (1ull << 62)

static __always_inline u64 ljf_key(struct task_struct *p)
{
	u64 used = p->se.sum_exec_runtime;

	return LJF_KEY_BASE - (used < LJF_KEY_BASE ? used : LJF_KEY_BASE - 1);
}

s32 BPF_STRUCT_OPS(ljf_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(ljf_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	akts_insert_own_vtime(p, 0, slice_ns, ljf_key(p), enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(ljf_dispatch, s32 cpu, struct task_struct *prev)
{
	struct task_struct *head;

	akts_count_call(AKTS_CB_DISPATCH);
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && !akts_leftovers_queued(0, akts_slot)) {
		/* prev goes on unless a longer job waits. */
		head = __COMPAT_scx_bpf_dsq_peek(akts_own_vtime(0));
		if (!head || !time_before(head->scx.dsq_vtime, ljf_key(prev))) {
			prev->scx.slice = slice_ns;
			return;
		}
	}
	if (!akts_drain_leftovers(0, akts_slot))
		scx_bpf_dsq_move_to_local(akts_own_vtime(0), 0);
}

AKTS_COUNT_ONLY(ljf, runnable)
AKTS_COUNT_ONLY(ljf, running)
AKTS_COUNT_ONLY(ljf, stopping)
AKTS_COUNT_ONLY(ljf, quiescent)

AKTS_POLICY_HOLDER(ljf, ljf);
