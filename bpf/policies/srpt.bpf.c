/* SPDX-License-Identifier: GPL-2.0 */
/*
 * srpt - shortest remaining processing time, from the application's estimate.
 *
 * What it does: a thread whose application said how much CPU time its
 * current request still needs (a hint: `akts hint TID 30ms`, v1.hint; akts.h,
 * Hints) goes to a queue of its own ordered by what remains of that
 * estimate, least first: short requests overtake long ones. At the end of
 * a slice (`slice`, 2 ms by default) a hinted task goes on unless a hinted
 * task with less remaining waits or the fallback's turn has come; a task
 * without a hint gives way to anyone waiting. Threads with no hint, or whose
 * estimate has run out (it was wrong: they used more CPU than they said),
 * fall back to weighted round-robin (PeeR): a FIFO of their own, taken once
 * for every `hinted_weight` (4 by default) hinted runs while both wait, so
 * among themselves and beside hinted work they keep making progress.
 *
 * Limits: SRPT starves long work: a thread with a correct but long estimate
 * runs only when everything shorter blocks, or when the frame's guard
 * rescues it (200 ms waits), and an LC thread starved so trips the circuit
 * breaker first. Only as good as the estimates; an application that
 * under-states every request gets plain round-robin after each estimate
 * runs out, and one that over-states gets priority it should not have,
 * until the estimate is used up. Not preemptive between slices: a short
 * request that arrives waits for the end of the running slice (at the tick,
 * 4 ms here) unless a CPU is idle. The comparison with the waiting head
 * ignores affinity (a shorter head pinned elsewhere still makes prev give
 * way). Classes and nice weights are not used; hints are per thread, and
 * each is a control request (v1.hint).
 *
 * When to pick it: request serving where the application knows request
 * sizes (prompt length, a GET against a SCAN) and the mix is heavy-tailed:
 * SRPT minimises mean response time (PeeR, Skyloft).
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 2000000, 100000, 100000000, "ns",
		       "the longest run before the remaining times are compared again"),
	    AKTS_PARAM(1, "hinted_weight", AKTS_PARAM_U64, 4, 1, 64, "",
		       "hinted runs per run of a thread without a hint when both wait"));
#define slice_ns akts_param(0)
#define hinted_weight akts_param(1)

/* Hinted runs granted since the last fallback one while a fallback thread waited, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} srpt_round SEC(".maps");

s32 BPF_STRUCT_OPS(srpt_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(srpt_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 left = akts_hint_remaining(p);

	akts_count_call(AKTS_CB_ENQUEUE);
	if (left)
		akts_insert_own_vtime(p, 0, slice_ns, left, enq_flags);
	else
		akts_insert_own(p, 0, slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(srpt_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 zero = 0;
	u64 *run = bpf_map_lookup_elem(&srpt_round, &zero);
	bool hinted_waits, fb_waits;
	struct task_struct *head;
	u64 left;

	akts_count_call(AKTS_CB_DISPATCH);
	if (!run)
		return;
	hinted_waits = scx_bpf_dsq_nr_queued(akts_own_vtime(0)) > 0;
	fb_waits = scx_bpf_dsq_nr_queued(akts_own_fifo(0)) > 0;
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && !akts_leftovers_queued(0, akts_slot)) {
		left = akts_hint_remaining(prev);
		if (!hinted_waits && !fb_waits) {
			prev->scx.slice = slice_ns;
			return;
		}
		/* A hinted prev goes on while nothing waiting has less left and the fallback's turn is not due. */
		if (left && (!fb_waits || *run < hinted_weight)) {
			head = hinted_waits ? __COMPAT_scx_bpf_dsq_peek(akts_own_vtime(0)) : NULL;
			if (!head || !time_before(head->scx.dsq_vtime, left)) {
				if (fb_waits)
					*run += 1;
				prev->scx.slice = slice_ns;
				return;
			}
		}
	}
	if (akts_drain_leftovers(0, akts_slot))
		return;
	/* prev, if still runnable, is queued again after this: its queue waits too. */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		if (akts_hint_remaining(prev))
			hinted_waits = true;
		else
			fb_waits = true;
	}
	/* The fallback's turn once hinted work has had hinted_weight runs in a row while it waited. */
	akts_wrr_move(akts_own_vtime(0), akts_own_fifo(0), hinted_waits, fb_waits, hinted_weight, run);
}

AKTS_COUNT_ONLY(srpt, runnable)

void BPF_STRUCT_OPS(srpt_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, slice_ns);
}

AKTS_COUNT_ONLY(srpt, stopping)
AKTS_COUNT_ONLY(srpt, quiescent)

AKTS_POLICY_HOLDER(srpt, srpt);
