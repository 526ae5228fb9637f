/* SPDX-License-Identifier: GPL-2.0 */
/*
 * throughput - let batch work make progress.
 *
 * What it does: one FIFO for every task, whatever its class, and long slices
 * (the live parameter `slice`, 20 ms by default, `akts set throughput.slice
 * 50ms`) so CPU-bound work runs uninterrupted. A waking task goes back to its previous CPU when that CPU is idle (warm caches), else
 * to any idle CPU the kernel finds, else to the FIFO.
 *
 * Limits: no class priority and no fairness beyond arrival order: a waking LC
 * task waits behind every queued BE task and may wait a whole long slice for a
 * CPU. Nice weights are not applied (FIFO has no virtual time).
 *
 * When to pick it: between bursts, when batch throughput matters and nothing
 * latency-critical is waiting.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 20000000, 100000, 100000000, "ns",
		       "the slice every task gets; long, for warm caches"));
#define slice_ns akts_param(0)

#define THROUGHPUT_OWN AKTS_OWN(AKTS_DSQ_BE_FIFO)

s32 BPF_STRUCT_OPS(throughput_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	akts_count_call(AKTS_CB_SELECT_CPU);
	if (bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) && scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		return prev_cpu;
	}
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
	return cpu;
}

void BPF_STRUCT_OPS(throughput_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(throughput_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	/* Nothing waiting: the running task keeps its CPU and its cache. */
	if (akts_prev_goes_on(prev, THROUGHPUT_OWN, akts_slot, false)) {
		prev->scx.slice = slice_ns;
		return;
	}
	/* What another policy left behind first, then arrival order. */
	if (!akts_drain_leftovers(THROUGHPUT_OWN, akts_slot))
		scx_bpf_dsq_move_to_local(AKTS_DSQ_BE_FIFO, 0);
}

AKTS_COUNT_ONLY(throughput, runnable)
AKTS_COUNT_ONLY(throughput, running)
AKTS_COUNT_ONLY(throughput, stopping)
AKTS_COUNT_ONLY(throughput, quiescent)

AKTS_POLICY_HOLDER(throughput, throughput);
