/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A policy built as a scheduler of its own, for the benchmark that prices the
 * dispatcher: the same frame (counters, stamps, lifecycle; akts_frame.bpf.h)
 * around a direct call of the policy's callbacks instead of a tail call.
 * Include the policy's .bpf.c first, then AKTS_STANDALONE(<prefix>).
 */
#ifndef AKTS_STANDALONE_BPF_H
#define AKTS_STANDALONE_BPF_H

#include "akts_frame.bpf.h"

UEI_DEFINE(uei);

/* BPF_STRUCT_OPS(x, ...) defines the always-inline body ____x(ctx, ...). */
#define AKTS_STANDALONE(pol)                                                                    \
	s32 BPF_STRUCT_OPS(sa_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags) \
	{                                                                                       \
		akts_count_entry(AKTS_CB_SELECT_CPU, akts_slot);                                \
		return ____##pol##_select_cpu(ctx, p, prev_cpu, wake_flags);                   \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_enqueue, struct task_struct *p, u64 enq_flags)                  \
	{                                                                                       \
		akts_count_entry(AKTS_CB_ENQUEUE, akts_slot);                                   \
		akts_mark_ready(p);                                                             \
		____##pol##_enqueue(ctx, p, enq_flags);                                        \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_dispatch, s32 cpu, struct task_struct *prev)                    \
	{                                                                                       \
		if (akts_frame_dispatch(prev))                                                  \
			return;                                                                 \
		akts_count_entry(AKTS_CB_DISPATCH, akts_slot);                                  \
		____##pol##_dispatch(ctx, cpu, prev);                                          \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_runnable, struct task_struct *p, u64 enq_flags)                 \
	{                                                                                       \
		akts_count_entry(AKTS_CB_RUNNABLE, akts_slot);                                  \
		akts_mark_ready(p);                                                             \
		____##pol##_runnable(ctx, p, enq_flags);                                       \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_running, struct task_struct *p)                                 \
	{                                                                                       \
		akts_count_entry(AKTS_CB_RUNNING, akts_slot);                                   \
		akts_mark_running(p);                                                           \
		____##pol##_running(ctx, p);                                                   \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_stopping, struct task_struct *p, bool runnable)                 \
	{                                                                                       \
		akts_count_entry(AKTS_CB_STOPPING, akts_slot);                                  \
		akts_mark_stopping(p, runnable);                                                \
		____##pol##_stopping(ctx, p, runnable);                                        \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_quiescent, struct task_struct *p, u64 deq_flags)                \
	{                                                                                       \
		akts_count_entry(AKTS_CB_QUIESCENT, akts_slot);                                 \
		akts_mark_quiescent(p, deq_flags);                                              \
		____##pol##_quiescent(ctx, p, deq_flags);                                      \
	}                                                                                       \
	s32 BPF_STRUCT_OPS(sa_init_task, struct task_struct *p, struct scx_init_task_args *args) \
	{                                                                                       \
		return akts_frame_init_task(p, args);                                           \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_exit_task, struct task_struct *p, struct scx_exit_task_args *args) \
	{                                                                                       \
		akts_frame_exit_task(p, args);                                                  \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_enable, struct task_struct *p)                                  \
	{                                                                                       \
		akts_frame_enable(p);                                                           \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_tick, struct task_struct *p)                                    \
	{                                                                                       \
		akts_frame_tick(p);                                                             \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_disable, struct task_struct *p)                                 \
	{                                                                                       \
		akts_frame_disable(p);                                                          \
	}                                                                                       \
	s32 BPF_STRUCT_OPS_SLEEPABLE(sa_init)                                                   \
	{                                                                                       \
		return akts_frame_init();                                                       \
	}                                                                                       \
	void BPF_STRUCT_OPS(sa_exit, struct scx_exit_info *ei)                                 \
	{                                                                                       \
		UEI_RECORD(uei, ei);                                                            \
	}                                                                                       \
	SCX_OPS_DEFINE(sa_ops, .select_cpu = (void *)sa_select_cpu, .enqueue = (void *)sa_enqueue, \
		       .dispatch = (void *)sa_dispatch, .runnable = (void *)sa_runnable,        \
		       .running = (void *)sa_running, .stopping = (void *)sa_stopping,          \
		       .quiescent = (void *)sa_quiescent, .init_task = (void *)sa_init_task,    \
		       .exit_task = (void *)sa_exit_task, .enable = (void *)sa_enable,          \
		       .disable = (void *)sa_disable, .tick = (void *)sa_tick,                  \
		       .init = (void *)sa_init, .exit = (void *)sa_exit,                        \
		       .flags = SCX_OPS_SWITCH_PARTIAL, .name = "akts_sa_" #pol)

#endif /* AKTS_STANDALONE_BPF_H */
