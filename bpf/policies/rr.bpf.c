/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rr - round-robin with a quantum commensurate with short requests.
 *
 * What it does: one queue of its own in arrival order for every task,
 * whatever its class; every run lasts at most one quantum (the live
 * parameter `slice`, 2 ms by default), after which the task goes to the back
 * if anyone waits. Runs that another policy queued with a longer slice are
 * cut to the quantum when they start. With N runnable tasks on a CPU each
 * waits at most (N - 1) quanta: short requests finish after a few quanta
 * whatever long work shares the CPU (PeeR and Skyloft pick RR for heavy-
 * tailed service times).
 *
 * Limits: every switch costs a context switch and cache warmth, so
 * throughput of long work drops as the quantum shrinks; no class priority,
 * so LC work shares CPUs equally with BE work rather than ahead of it. The
 * quantum is enforced at the scheduler tick (4 ms on the pinned kernel) and
 * at wake-ups: with the frame's quantum timer off (the default), a quantum
 * below the tick is only met when something else preempts; with it on
 * (the daemon's "guard": {"quantum_timer": ...}; akts.h, Quantum timer) it
 * is met to within the timer's period. Skyloft's 5 us quanta need user
 * interrupts, which this kernel lacks. Nice weights are not applied.
 *
 * When to pick it: when request sizes are heavy-tailed and unknown, LC and
 * BE are of equal importance, or as the fallback when no size estimate
 * exists.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 2000000, 100000, 100000000, "ns",
		       "the quantum: how long a task runs before the next in line"));
#define slice_ns akts_param(0)

s32 BPF_STRUCT_OPS(rr_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(rr_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	akts_insert_own(p, 0, slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(rr_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	/* A new quantum only when nobody waits; else prev goes to the back (ops.enqueue). */
	if (akts_prev_goes_on(prev, 0, akts_slot, false)) {
		prev->scx.slice = slice_ns;
		return;
	}
	if (!akts_drain_leftovers(0, akts_slot))
		scx_bpf_dsq_move_to_local(akts_own_fifo(0), 0);
}

AKTS_COUNT_ONLY(rr, runnable)

void BPF_STRUCT_OPS(rr_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, slice_ns);
}

AKTS_COUNT_ONLY(rr, stopping)
AKTS_COUNT_ONLY(rr, quiescent)

AKTS_POLICY_HOLDER(rr, rr);
