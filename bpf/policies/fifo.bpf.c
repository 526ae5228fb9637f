/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fifo - first come, first served, nearly run to completion.
 *
 * What it does: one queue of its own in arrival order for every task,
 * whatever its class, and long slices (the live parameter `slice`, 50 ms by
 * default, up to 1 s) so that a task, once started, runs until it blocks:
 * PeeR's FIFO, which is non-preemptive. A waking task goes to an idle CPU
 * when the kernel finds one, else to the back of the queue. No previous-CPU
 * preference and no refill: when a slice ends with others waiting, the task
 * goes to the back.
 *
 * Limits: no class priority and no fairness: a short request that arrives
 * behind long ones waits for all of them (head-of-line blocking), up to a
 * whole slice per CPU; with long slices an LC task can wait past the
 * circuit breaker's threshold, and the breaker then puts the safe policy
 * back. Nice weights are not applied.
 *
 * When to pick it: when requests are uniform and short next to the slice
 * (FIFO minimises mean latency for light-tailed service times, PeeR), or as
 * a baseline; not when long and short work share CPUs.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 50000000, 100000, 1000000000, "ns",
		       "how long a task may run before the next in line; long: run to completion"));
#define slice_ns akts_param(0)

s32 BPF_STRUCT_OPS(fifo_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(fifo_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	akts_insert_own(p, 0, slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(fifo_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	/* Nobody waiting: the running task keeps its CPU. */
	if (akts_prev_goes_on(prev, 0, akts_slot, false)) {
		prev->scx.slice = slice_ns;
		return;
	}
	/* What another policy left behind first, then arrival order. */
	if (!akts_drain_leftovers(0, akts_slot))
		scx_bpf_dsq_move_to_local(akts_own_fifo(0), 0);
}

AKTS_COUNT_ONLY(fifo, runnable)
AKTS_COUNT_ONLY(fifo, running)
AKTS_COUNT_ONLY(fifo, stopping)
AKTS_COUNT_ONLY(fifo, quiescent)

AKTS_POLICY_HOLDER(fifo, fifo);
