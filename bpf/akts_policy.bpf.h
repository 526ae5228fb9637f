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
 * Live parameters (akts.h, Parameters). A policy with parameters declares them
 * once, by index:
 *   AKTS_PARAMS(AKTS_PARAM(0, "quantum", AKTS_PARAM_DURATION, 2000000, 100000, 100000000, "ns",
 *                          "how long a task runs before the next in line"));
 * and reads one with akts_param(0): the value in force, clamped to its range.
 */
#ifdef AKTS_PARAMS_FIXED /* a policy built as a scheduler of its own (standalone.bpf.h): its defaults */
#define AKTS_PARAMS_MAP_LOOKUP(key) ((void)(key), (struct akts_param_values *)0)
#else
#define AKTS_PARAMS_MAP_LOOKUP(key) ((struct akts_param_values *)bpf_map_lookup_elem(&akts_params, (key)))
#endif
#define AKTS_PARAM(idx, pname, ptype, pdef, pmin, pmax, punit, pdesc)                                       \
	[idx] = { .type = (ptype), .def = (pdef), .min = (pmin), .max = (pmax), .name = pname, .unit = punit, \
		  .desc = pdesc }
#define AKTS_PARAMS(...)                                                                     \
	const volatile struct akts_param_desc akts_param_descs[AKTS_MAX_PARAMS] = { __VA_ARGS__ }; \
	static __always_inline u64 akts_param(u32 idx)                                       \
	{                                                                                    \
		struct akts_param_values *vals;                                              \
		u32 slot = akts_slot;                                                        \
		u64 v, lo, hi;                                                               \
                                                                                             \
		if (idx >= AKTS_MAX_PARAMS)                                                  \
			return 0;                                                            \
		lo = akts_param_descs[idx].min;                                              \
		hi = akts_param_descs[idx].max;                                              \
		vals = AKTS_PARAMS_MAP_LOOKUP(&slot);                                        \
		v = vals ? vals->v[idx] : akts_param_descs[idx].def;                         \
		return v < lo ? lo : v > hi ? hi : v;                                        \
	}

/*
 * This slot's private queues (akts.h, Queues): two FIFO (which 0 or 1) and
 * two vtime (which 0 or 1). They exist whether or not the slot is filled;
 * inserting marks the slot busy, so the policy after a switch drains them.
 */
#define akts_own_fifo(which) AKTS_DSQ_PRIVATE(akts_slot, AKTS_PQ_FIFO0 + ((which) & 1))
#define akts_own_vtime(which) AKTS_DSQ_PRIVATE(akts_slot, AKTS_PQ_VTIME0 + ((which) & 1))

static __always_inline void akts_insert_own(struct task_struct *p, u32 which, u64 slice, u64 enq_flags)
{
	akts_mark_busy(akts_slot);
	scx_bpf_dsq_insert(p, akts_own_fifo(which), slice, enq_flags);
}

/* Ordered by `key` (the kernel stores it in p->scx.dsq_vtime; the fair vtime is kept apart). */
static __always_inline void akts_insert_own_vtime(struct task_struct *p, u32 which, u64 slice, u64 key,
						  u64 enq_flags)
{
	akts_mark_busy(akts_slot);
	scx_bpf_dsq_insert_vtime(p, akts_own_vtime(which), slice, key, enq_flags);
}

/*
 * The common select_cpu: the kernel's idle-CPU pick; a task that finds an
 * idle CPU goes straight to its local DSQ with `slice`, the rest to
 * ops.enqueue.
 */
static __always_inline s32 akts_select_idle_cpu(struct task_struct *p, s32 prev_cpu, u64 wake_flags, u64 slice)
{
	bool is_idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);

	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, 0);
	return cpu;
}

/* In ops.running: a run another policy queued with a longer slice is cut to this policy's `slice`. */
static __always_inline void akts_cap_slice(struct task_struct *p, u64 slice)
{
	if (p->scx.slice > slice)
		p->scx.slice = slice;
}

/*
 * Weighted round-robin between two queues of this CPU's choosing: `a` gets up
 * to `weight` runs in a row while `b` waits, then `b` one; `run` (per CPU) is
 * a's runs since b's last. a_waits and b_waits count prev too when it will be
 * queued again. True if a task moved.
 */
static __always_inline bool akts_wrr_move(u64 a, u64 b, bool a_waits, bool b_waits, u64 weight, u64 *run)
{
	if (a_waits && (!b_waits || *run < weight) && scx_bpf_dsq_move_to_local(a, 0)) {
		*run = b_waits ? *run + 1 : 0;
		return true;
	}
	if (scx_bpf_dsq_move_to_local(b, 0)) {
		*run = 0;
		return true;
	}
	/* b emptied meanwhile (another CPU took it): a, if any. */
	if (scx_bpf_dsq_move_to_local(a, 0)) {
		*run = 0;
		return true;
	}
	return false;
}

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

/*
 * One queue for every class, in arrival order, each run at most `slice_expr` ns (an expression, e.g. a live
 * parameter): fifo and rr. The running task keeps its CPU with a new slice while nobody waits; else it goes to
 * the back (ops.enqueue), and what another policy left behind in the frame's queues runs first. With
 * cap_at_start, a run another policy queued with a longer slice is cut to `slice_expr` when it starts (rr's quantum);
 * without, it keeps it (fifo runs to completion). Defines prefix_select_cpu .. prefix_quiescent; the policy
 * then names its holder with AKTS_POLICY_HOLDER(pol, prefix).
 */
#define AKTS_ONE_QUEUE_POLICY(prefix, slice_expr, cap_at_start)                                 \
	s32 BPF_STRUCT_OPS(prefix##_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags) \
	{                                                                                  \
		akts_count_call(AKTS_CB_SELECT_CPU);                                       \
		return akts_select_idle_cpu(p, prev_cpu, wake_flags, (slice_expr));             \
	}                                                                                  \
	void BPF_STRUCT_OPS(prefix##_enqueue, struct task_struct *p, u64 enq_flags)        \
	{                                                                                  \
		akts_count_call(AKTS_CB_ENQUEUE);                                          \
		akts_insert_own(p, 0, (slice_expr), enq_flags);                                 \
		akts_kick_idle_cpu(p);                                                     \
	}                                                                                  \
	void BPF_STRUCT_OPS(prefix##_dispatch, s32 cpu, struct task_struct *prev)          \
	{                                                                                  \
		akts_count_call(AKTS_CB_DISPATCH);                                         \
		if (akts_prev_goes_on(prev, 0, akts_slot, false)) {                        \
			prev->scx.slice = (slice_expr);                                         \
			return;                                                            \
		}                                                                          \
		if (!akts_drain_leftovers(0, akts_slot))                                   \
			scx_bpf_dsq_move_to_local(akts_own_fifo(0), 0);                    \
	}                                                                                  \
	AKTS_COUNT_ONLY(prefix, runnable)                                                  \
	void BPF_STRUCT_OPS(prefix##_running, struct task_struct *p)                       \
	{                                                                                  \
		akts_count_call(AKTS_CB_RUNNING);                                          \
		if (cap_at_start)                                                          \
			akts_cap_slice(p, (slice_expr));                                        \
	}                                                                                  \
	AKTS_COUNT_ONLY(prefix, stopping)                                                  \
	AKTS_COUNT_ONLY(prefix, quiescent)

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
