/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wrr - weighted round-robin between the classes.
 *
 * What it does: two queues of its own in arrival order, one per class (LC,
 * BE). When both classes wait, a CPU gives up to `lc_weight` runs to LC
 * tasks (4 by default) for every run of a BE task, so LC work goes first most of the time while
 * BE work keeps a guaranteed share of the dispatches, 1 in lc_weight + 1,
 * instead of starving behind a steady LC stream as under strict priority.
 * Every run lasts at most one quantum (`slice`, 2 ms by default); a run
 * another policy queued with a longer slice is cut to it when it starts. The
 * round is counted per CPU.
 *
 * Limits: the weights count dispatches, not CPU time: a BE task that runs a
 * whole quantum while LC tasks run briefly gets more than 1/(lc_weight + 1)
 * of the CPU. No order within a class but arrival; nice weights are not
 * applied. The quantum is enforced at the tick (see rr).
 *
 * When to pick it: when LC work should come first but a steady LC load must
 * not starve batch work (latency's strict priority can); also SRPT's
 * fallback when size estimates are missing (PeeR).
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 2000000, 100000, 100000000, "ns",
		       "the quantum: how long a task runs before the next in line"),
	    AKTS_PARAM(1, "lc_weight", AKTS_PARAM_U64, 4, 1, 64, "",
		       "LC dispatches per BE dispatch when both classes wait"));
#define slice_ns akts_param(0)
#define lc_weight akts_param(1)

/* LC runs granted since the last BE one while BE waited, per CPU (the policy's own state). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} wrr_round SEC(".maps");

s32 BPF_STRUCT_OPS(wrr_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(wrr_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	akts_insert_own(p, akts_task_class(p) == AKTS_CLASS_LC ? 0 : 1, slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(wrr_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 zero = 0;
	u64 *lc_run = bpf_map_lookup_elem(&wrr_round, &zero);
	bool lc_waits, be_waits, prev_lc;

	akts_count_call(AKTS_CB_DISPATCH);
	if (!lc_run)
		return;
	lc_waits = scx_bpf_dsq_nr_queued(akts_own_fifo(0)) > 0;
	be_waits = scx_bpf_dsq_nr_queued(akts_own_fifo(1)) > 0;
	/*
	 * prev is not in a queue yet, so it counts here: it goes on when none of
	 * its class waits (within a class, turns go round) and the other class
	 * does not wait, or prev is LC and LC's turns are not used up.
	 */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && !akts_leftovers_queued(0, akts_slot)) {
		prev_lc = akts_task_class(prev) == AKTS_CLASS_LC;
		if (!(prev_lc ? lc_waits : be_waits)) {
			if (!(prev_lc ? be_waits : lc_waits)) {
				prev->scx.slice = slice_ns;
				return;
			}
			if (prev_lc && *lc_run < lc_weight) {
				*lc_run += 1;
				prev->scx.slice = slice_ns;
				return;
			}
		}
	}
	if (akts_drain_leftovers(0, akts_slot))
		return;
	/* prev, if still runnable, is queued again after this: its class waits too. */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		if (akts_task_class(prev) == AKTS_CLASS_LC)
			lc_waits = true;
		else
			be_waits = true;
	}
	/* BE's turn once LC has had lc_weight runs in a row while BE waited. */
	akts_wrr_move(akts_own_fifo(0), akts_own_fifo(1), lc_waits, be_waits, lc_weight, lc_run);
}

AKTS_COUNT_ONLY(wrr, runnable)

void BPF_STRUCT_OPS(wrr_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, slice_ns);
}

AKTS_COUNT_ONLY(wrr, stopping)
AKTS_COUNT_ONLY(wrr, quiescent)

AKTS_POLICY_HOLDER(wrr, wrr);
