/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stray - a policy that queues every task nowhere near its CPU: in the local
 * DSQ of the next CPU after the one it last ran on (when its mask allows),
 * behind a task that never yields (infinite slices, refilled in dispatch).
 * Built only for `akts selftest`: local DSQs cannot be walked, so the circuit
 * breaker sees this starvation only as a local DSQ that stays full behind
 * one run. It drains what other policies left in the shared queues, so that
 * this is its only fault. Never part of the library.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(stray_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return prev_cpu;
}

void BPF_STRUCT_OPS(stray_enqueue, struct task_struct *p, u64 enq_flags)
{
	const struct cpumask *online;
	s32 cpu = scx_bpf_task_cpu(p);
	u32 next = (u32)cpu + 1 < scx_bpf_nr_cpu_ids() ? (u32)cpu + 1 : 0;
	bool far = false;

	akts_count_call(AKTS_CB_ENQUEUE);
	enq_flags &= ~(u64)(SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
	if (!p->migration_disabled && bpf_cpumask_test_cpu(next, p->cpus_ptr)) {
		online = scx_bpf_get_online_cpumask();
		far = bpf_cpumask_test_cpu(next, online);
		scx_bpf_put_cpumask(online);
	}
	if (far) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | next, SCX_SLICE_INF, enq_flags);
		scx_bpf_kick_cpu(next, SCX_KICK_IDLE);
	} else {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_INF, enq_flags);
	}
}

void BPF_STRUCT_OPS(stray_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	/*
	 * It keeps the hand-off (its only fault is where it queues): everything
	 * others left comes to this CPU's local DSQ at once, so that nothing of
	 * theirs waits in a shared queue behind its endless runs.
	 */
	bool moved = false;
	u32 i;

	bpf_for(i, 0, 32) {
		if (!akts_drain_leftovers(0, akts_slot))
			break;
		moved = true;
	}
	if (moved)
		return;
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED))
		prev->scx.slice = SCX_SLICE_INF;
}

AKTS_COUNT_ONLY(stray, runnable)

void BPF_STRUCT_OPS(stray_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	p->scx.slice = SCX_SLICE_INF;
}

AKTS_COUNT_ONLY(stray, stopping)
AKTS_COUNT_ONLY(stray, quiescent)

AKTS_POLICY_HOLDER(stray, stray);
