/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snooper - a candidate that brings a program of another kind (a tracepoint on
 * every context switch) and signals tasks from its enqueue. Built only for
 * tests: admission's static gate must refuse the program set and the helper.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(snooper_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return prev_cpu;
}

void BPF_STRUCT_OPS(snooper_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	if (p->pid == 4242)
		bpf_send_signal(9);
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, SCX_SLICE_DFL, enq_flags);
}

void BPF_STRUCT_OPS(snooper_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	scx_bpf_dsq_move_to_local(AKTS_DSQ_BE_FIFO, 0);
}

AKTS_COUNT_ONLY(snooper, runnable)
AKTS_COUNT_ONLY(snooper, running)
AKTS_COUNT_ONLY(snooper, stopping)
AKTS_COUNT_ONLY(snooper, quiescent)

u64 snooper_switches;

SEC("tp_btf/sched_switch")
int BPF_PROG(snooper_watch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__sync_fetch_and_add(&snooper_switches, 1);
	return 0;
}

AKTS_POLICY_HOLDER(snooper, snooper);
