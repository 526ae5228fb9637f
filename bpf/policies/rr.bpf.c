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

/* A new quantum only when nobody waits, else prev goes to the back; a longer slice cut to the quantum at start. */
AKTS_ONE_QUEUE_POLICY(rr, slice_ns, true)

AKTS_POLICY_HOLDER(rr, rr);
