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

/* Nobody waiting: the running task keeps its CPU; what another policy left behind first, then arrival order. */
AKTS_ONE_QUEUE_POLICY(fifo, slice_ns, false)

AKTS_POLICY_HOLDER(fifo, fifo);
