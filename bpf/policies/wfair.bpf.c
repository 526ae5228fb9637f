/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wfair - weighted fair sharing, EEVDF-like: lag and virtual deadlines.
 *
 * What it does: every task, whatever its class, in one queue of its own
 * ordered by virtual deadline: the task's virtual time (the frame's fair
 * vtime, which latency shares, so a switch between the two keeps each task's
 * history) plus one request (`slice`, 3 ms by default) scaled by the inverse
 * of its weight (nice). CPU time is charged the same way, so over time each
 * task gets CPU in proportion to its weight. Lag is bounded: a task that
 * slept comes back at most one slice behind the clock (it cannot bank
 * credit), and a task that ran ahead keeps its debt. Runs another policy
 * queued with a longer slice are cut to the slice when they start.
 *
 * Limits: no eligibility test: the kernel's EEVDF runs the earliest deadline
 * among tasks whose lag is non-negative, but a DSQ can only be taken in key
 * order, so here a task ahead of the clock can still run before its turn
 * (its deadline carries its debt, which bounds how far). No class priority:
 * LC work gets its fair share, not more. The slice is enforced at the tick.
 *
 * When to pick it: when tasks of one class, or of equal importance, must
 * share CPUs in proportion to their nice weights, the CFS/EEVDF behaviour
 * under sched_ext.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 3000000, 100000, 100000000, "ns",
		       "one request: the run a task asks for, and the lag a sleeper may keep"));
#define slice_ns akts_param(0)

s32 BPF_STRUCT_OPS(wfair_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(wfair_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 slice = slice_ns; /* one read for the lag bound and the deadline */
	u64 deadline = akts_fair_vtime(p, slice) + scale_by_task_weight_inverse(p, slice);

	akts_count_call(AKTS_CB_ENQUEUE);
	akts_insert_own_vtime(p, 0, slice, deadline, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(wfair_dispatch, s32 cpu, struct task_struct *prev)
{
	struct akts_task_ctx *tctx;
	struct task_struct *head;
	u64 slice = slice_ns, vt;

	akts_count_call(AKTS_CB_DISPATCH);
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && !akts_leftovers_queued(0, akts_slot)) {
		/* prev goes on unless a task with an earlier virtual deadline waits. */
		tctx = akts_task_ctx(prev);
		head = __COMPAT_scx_bpf_dsq_peek(akts_own_vtime(0));
		if (tctx) {
			vt = tctx->vtime + scale_by_task_weight_inverse(prev, slice + akts_uncharged_ns(prev, tctx));
			if (!head || !time_before(head->scx.dsq_vtime, vt)) {
				/* The run goes on with no ops.stopping: charge it now, so the clock moves. */
				akts_charge_vtime(prev);
				akts_advance_vtime(prev);
				prev->scx.slice = slice;
				return;
			}
		}
	}
	if (!akts_drain_leftovers(0, akts_slot))
		scx_bpf_dsq_move_to_local(akts_own_vtime(0), 0);
}

AKTS_COUNT_ONLY(wfair, runnable)

void BPF_STRUCT_OPS(wfair_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, slice_ns);
	akts_advance_vtime(p);
}

void BPF_STRUCT_OPS(wfair_stopping, struct task_struct *p, bool runnable)
{
	akts_count_call(AKTS_CB_STOPPING);
	akts_charge_vtime(p);
}

AKTS_COUNT_ONLY(wfair, quiescent)

AKTS_POLICY_HOLDER(wfair, wfair);
