/* SPDX-License-Identifier: GPL-2.0 */
/*
 * latency - protect latency-critical (LC) work.
 *
 * What it does: a waking task goes straight to an idle CPU when there is one
 * (the kernel's idle pick, which prefers the previous CPU and its cache
 * siblings). Otherwise LC tasks queue on a vtime-ordered LC queue that is
 * always drained before best-effort (BE) work, and an idle CPU is kicked to
 * take them. Slices are short (the live parameter `slice`, 1 ms by default) so a CPU is handed
 * back quickly. Both classes are weighted-fair within themselves: virtual time
 * is charged by run time scaled by nice weight.
 *
 * Limits: LC strictly precedes BE, so a CPU-bound LC process holds batch work
 * back to what the frame's bounded-wait guard grants it (a rescue slice about
 * every max_wait: 1-2% of the CPU measured with the defaults); short slices
 * cost batch throughput in context switches and cache
 * misses. It does not preempt a running BE task for a waking LC one: that
 * waits for the next slice end, at most one slice.
 *
 * When to pick it: during request bursts, or whenever LC tail latency (e.g. an
 * LLM server's time-to-first-token) matters more than batch progress.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 1000000, 100000, 100000000, "ns",
		       "the slice every task gets; short, so CPUs are handed back quickly"));
#define slice_ns akts_param(0)

#define LATENCY_OWN (AKTS_OWN(AKTS_DSQ_LC_VTIME) | AKTS_OWN(AKTS_DSQ_BE_VTIME))

s32 BPF_STRUCT_OPS(latency_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(latency_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	if (akts_task_class(p) == AKTS_CLASS_LC)
		akts_insert_vtime(p, AKTS_DSQ_LC_VTIME, slice_ns, enq_flags);
	else
		akts_insert_vtime(p, AKTS_DSQ_BE_VTIME, slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(latency_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	if (akts_prev_goes_on(prev, LATENCY_OWN, akts_slot, true)) {
		/* The run goes on with no ops.stopping: charge it now, so the clock moves. */
		akts_charge_vtime(prev);
		akts_advance_vtime(prev);
		prev->scx.slice = slice_ns;
		return;
	}
	/* What another policy left behind first, then LC before BE. */
	if (!akts_drain_leftovers(LATENCY_OWN, akts_slot))
		akts_drain2(AKTS_DSQ_LC_VTIME, AKTS_DSQ_BE_VTIME);
}

AKTS_COUNT_ONLY(latency, runnable)

void BPF_STRUCT_OPS(latency_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, slice_ns);
	akts_advance_vtime(p);
}

void BPF_STRUCT_OPS(latency_stopping, struct task_struct *p, bool runnable)
{
	akts_count_call(AKTS_CB_STOPPING);
	akts_charge_vtime(p);
}

AKTS_COUNT_ONLY(latency, quiescent)

AKTS_POLICY_HOLDER(latency, latency);
