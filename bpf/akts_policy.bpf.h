/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every policy object includes: the shared maps, its slot number (set by
 * the loader before load) and the per-slot invocation counter.
 *
 * A policy implements the seven dispatched callbacks as ordinary sched_ext
 * struct_ops programs and names them in a "holder" struct_ops map
 * (AKTS_POLICY_HOLDER). The holder is never registered: it only exists because
 * libbpf will not load a struct_ops program that no map references, and it
 * binds each program to its sched_ext_ops member, which is what lets the
 * program into that member's prog array.
 */
#ifndef AKTS_POLICY_BPF_H
#define AKTS_POLICY_BPF_H

#include "akts_common.bpf.h"

/* The slot this copy of the policy occupies; set by the loader. */
const volatile u32 akts_slot = 0;

/*
 * Counted inside the policy, never in the dispatcher: a counter after the tail
 * call only runs when the call failed, so the two outcomes are exclusive and a
 * dispatch that silently fell through cannot be mistaken for one that worked.
 */
static __always_inline void akts_count_call(enum akts_callback cb)
{
#ifndef AKTS_NO_COUNTERS
	struct akts_cpu_stats *st = akts_cpu_stats();

	if (st)
		st->calls[cb][akts_slot & (AKTS_MAX_SLOTS - 1)]++;
#endif
}

/*
 * Callbacks a policy needs only for the counters (the frame does the rest):
 * AKTS_COUNT_ONLY(prefix, runnable) defines prefix_runnable, and likewise for
 * running, stopping and quiescent.
 */
#define AKTS_COUNT_ONLY_ARGS_runnable struct task_struct *p, u64 enq_flags
#define AKTS_COUNT_ONLY_ARGS_running struct task_struct *p
#define AKTS_COUNT_ONLY_ARGS_stopping struct task_struct *p, bool runnable
#define AKTS_COUNT_ONLY_ARGS_quiescent struct task_struct *p, u64 deq_flags
#define AKTS_COUNT_ONLY_CB_runnable AKTS_CB_RUNNABLE
#define AKTS_COUNT_ONLY_CB_running AKTS_CB_RUNNING
#define AKTS_COUNT_ONLY_CB_stopping AKTS_CB_STOPPING
#define AKTS_COUNT_ONLY_CB_quiescent AKTS_CB_QUIESCENT
#define AKTS_COUNT_ONLY(prefix, cb)                                              \
	void BPF_STRUCT_OPS(prefix##_##cb, AKTS_COUNT_ONLY_ARGS_##cb)            \
	{                                                                        \
		akts_count_call(AKTS_COUNT_ONLY_CB_##cb);                        \
	}

#define AKTS_POLICY_HOLDER(pol, prefix)                               \
	SEC(".struct_ops.link")                                        \
	struct sched_ext_ops pol##_holder = {                         \
		.select_cpu = (void *)prefix##_select_cpu,             \
		.enqueue = (void *)prefix##_enqueue,                   \
		.dispatch = (void *)prefix##_dispatch,                 \
		.runnable = (void *)prefix##_runnable,                 \
		.running = (void *)prefix##_running,                   \
		.stopping = (void *)prefix##_stopping,                 \
		.quiescent = (void *)prefix##_quiescent,               \
		.name = "akts_" #pol,                                 \
	}

#endif /* AKTS_POLICY_BPF_H */
