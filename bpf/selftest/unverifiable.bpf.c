/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unverifiable - a policy the verifier must reject. It exists only so that
 * `akts selftest` can prove that admitting a bad policy into a running library
 * fails with the verifier's reason and changes nothing: no slot filled, the
 * scheduler still running what it ran. Never part of the library.
 *
 * The fault: enqueue indexes a map value with the task's pid, an index the
 * verifier cannot bound.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(unverifiable_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	return prev_cpu;
}

void BPF_STRUCT_OPS(unverifiable_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct akts_cpu_stats *st = akts_cpu_stats();

	if (st) {
		u32 unbounded = p->pid;

		st->entries[unbounded]++;
	}
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, 1000000, enq_flags);
}

void BPF_STRUCT_OPS(unverifiable_dispatch, s32 cpu, struct task_struct *prev)
{
	if (!akts_drain_leftovers(AKTS_OWN(AKTS_DSQ_BE_FIFO), akts_slot))
		scx_bpf_dsq_move_to_local(AKTS_DSQ_BE_FIFO, 0);
}

void BPF_STRUCT_OPS(unverifiable_runnable, struct task_struct *p, u64 enq_flags) {}
void BPF_STRUCT_OPS(unverifiable_running, struct task_struct *p) {}
void BPF_STRUCT_OPS(unverifiable_stopping, struct task_struct *p, bool runnable) {}
void BPF_STRUCT_OPS(unverifiable_quiescent, struct task_struct *p, u64 deq_flags) {}

AKTS_POLICY_HOLDER(unverifiable, unverifiable);
