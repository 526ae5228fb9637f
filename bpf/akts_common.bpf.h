/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps and helpers shared by the dispatcher and every policy.
 *
 * Each policy is its own BPF object. It declares these maps exactly as the
 * dispatcher does, and the loader points them at the dispatcher's maps
 * (bpf_map__reuse_fd) before the policy loads, so one set of counters, task
 * storage, classes and virtual clock serves the whole library. Keep every
 * helper __always_inline: with tail calls in the program, each BPF-to-BPF
 * frame is limited to 256 bytes of stack.
 */
#ifndef AKTS_COMMON_BPF_H
#define AKTS_COMMON_BPF_H

#include "akts_kfunc_compat.bpf.h" /* <scx/common.bpf.h>, and kfuncs across kernels */
#include "akts.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_selector);
} akts_selector SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_cpu_stats);
} akts_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct akts_task_ctx);
} akts_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);	/* tgid */
	__type(value, u32);	/* enum akts_class */
} akts_classes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_shared);
} akts_shared SEC(".maps");

/* Size estimates by thread (akts.h, Hints): written by the daemon, read by policies. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AKTS_MAX_HINTS);
	__type(key, u32);	/* tid (the kernel's pid) */
	__type(value, struct akts_hint);
} akts_hints SEC(".maps");

/* Live parameters by slot (akts.h, Parameters): written by user space through its mapping. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, AKTS_MAX_SLOTS);
	__type(key, u32);
	__type(value, struct akts_param_values);
} akts_params SEC(".maps");

static __always_inline struct akts_cpu_stats *akts_cpu_stats(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&akts_stats, &zero);
}

static __always_inline struct akts_task_ctx *akts_task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&akts_tasks, p, 0, 0);
}

static __always_inline u32 akts_task_class(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);

	return tctx && tctx->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
}

static __always_inline u32 akts_lookup_class(struct task_struct *p)
{
	u32 tgid = p->tgid;
	u32 *cls = bpf_map_lookup_elem(&akts_classes, &tgid);

	return cls && *cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
}

/* The CPU time p's hinted work still needs; 0: no hint, or the estimate ran out (it was wrong). */
static __always_inline u64 akts_hint_remaining(struct task_struct *p)
{
	u32 tid = p->pid;
	struct akts_hint *h = bpf_map_lookup_elem(&akts_hints, &tid);
	u64 used, est;

	if (!h)
		return 0;
	est = READ_ONCE(h->remaining_ns);
	used = p->se.sum_exec_runtime > h->exec_at_ns ? p->se.sum_exec_runtime - h->exec_at_ns : 0;
	return used < est ? est - used : 0;
}

static __always_inline struct akts_shared *akts_shared_state(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&akts_shared, &zero);
}

/*
 * Wakes an idle CPU the task may run on, so work queued on a shared DSQ is not
 * left waiting while a CPU sleeps.
 */
static __always_inline void akts_kick_idle_cpu(struct task_struct *p)
{
	s32 cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);

	if (cpu >= 0)
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/* True if any shared DSQ holds a task. */
static __always_inline bool akts_any_queued(void)
{
	return scx_bpf_dsq_nr_queued(AKTS_DSQ_LC_FIFO) > 0 || scx_bpf_dsq_nr_queued(AKTS_DSQ_BE_FIFO) > 0 ||
	       scx_bpf_dsq_nr_queued(AKTS_DSQ_LC_VTIME) > 0 || scx_bpf_dsq_nr_queued(AKTS_DSQ_BE_VTIME) > 0;
}

/*
 * The hand-off (akts.h). A policy names the shared DSQs it inserts into as a
 * mask of AKTS_OWN() bits, and its slot (`me`, whose private queues are its
 * own too; AKTS_SLOT_NONE for the built-in default). Every other shared DSQ,
 * and every other slot's private queues, can only hold what a previously
 * effective policy left there.
 */
#define AKTS_OWN(dsq) (1u << ((dsq) - AKTS_DSQ_FIRST))

/* Other slots whose private queues may hold tasks (akts.h, Hand-off). */
static __always_inline u32 akts_busy_others(u32 me)
{
	struct akts_shared *sh = akts_shared_state();
	u32 busy = sh ? READ_ONCE(sh->busy_slots) : 0;

	return me < AKTS_MAX_SLOTS ? busy & ~(1u << me) : busy;
}

/* Marks `slot`'s private queues as possibly holding tasks (an atomic only when the bit is not set yet). */
static __always_inline void akts_mark_busy(u32 slot)
{
	struct akts_shared *sh = akts_shared_state();
	u32 bit = 1u << (slot & (AKTS_MAX_SLOTS - 1));

	if (sh && !(READ_ONCE(sh->busy_slots) & bit))
		__sync_fetch_and_or(&sh->busy_slots, bit);
}

static __always_inline bool akts_leftover_in(u32 own, u64 dsq)
{
	return !(own & AKTS_OWN(dsq)) && scx_bpf_dsq_nr_queued(dsq) > 0;
}

/* True if a shared DSQ outside `own` or another slot's private queue may hold a task. */
static __always_inline bool akts_leftovers_queued(u32 own, u32 me)
{
	return akts_leftover_in(own, AKTS_DSQ_LC_FIFO) || akts_leftover_in(own, AKTS_DSQ_LC_VTIME) ||
	       akts_leftover_in(own, AKTS_DSQ_BE_FIFO) || akts_leftover_in(own, AKTS_DSQ_BE_VTIME) ||
	       akts_busy_others(me);
}

static __always_inline bool akts_move_leftover(u32 own, u64 dsq)
{
	return !(own & AKTS_OWN(dsq)) && scx_bpf_dsq_move_to_local(dsq, 0);
}

/*
 * Moves the first task of another slot's private queues to this CPU; true if
 * one moved. A slot whose four queues are found empty has its busy bit
 * cleared (akts.h, Hand-off).
 * The ids always exist: every slot's private queues live from attach to exit.
 */
static __always_inline bool akts_drain_private_leftovers(u32 me)
{
	struct akts_shared *sh;
	u32 busy = akts_busy_others(me), s;

	if (!busy)
		return false;
	bpf_for(s, 0, AKTS_MAX_SLOTS) {
		if (!(busy & (1u << s)))
			continue;
		if (scx_bpf_dsq_move_to_local(AKTS_DSQ_PRIVATE(s, AKTS_PQ_FIFO0), 0) ||
		    scx_bpf_dsq_move_to_local(AKTS_DSQ_PRIVATE(s, AKTS_PQ_VTIME0), 0) ||
		    scx_bpf_dsq_move_to_local(AKTS_DSQ_PRIVATE(s, AKTS_PQ_FIFO1), 0) ||
		    scx_bpf_dsq_move_to_local(AKTS_DSQ_PRIVATE(s, AKTS_PQ_VTIME1), 0))
			return true;
		/* Nothing this CPU may run; the bit goes only if the queues are empty (not just pinned elsewhere). */
		if (scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(s, AKTS_PQ_FIFO0)) > 0 ||
		    scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(s, AKTS_PQ_VTIME0)) > 0 ||
		    scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(s, AKTS_PQ_FIFO1)) > 0 ||
		    scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(s, AKTS_PQ_VTIME1)) > 0)
			continue;
		sh = akts_shared_state();
		if (sh)
			__sync_fetch_and_and(&sh->busy_slots, ~(1u << s));
	}
	return false;
}

/*
 * Moves the first leftover (shared LC queues first, then shared BE, then
 * other slots' private queues) to this CPU; true if one moved. A policy's
 * dispatch calls this before it drains its own queues, so what a switch left
 * behind runs before anything queued since.
 */
static __always_inline bool akts_drain_leftovers(u32 own, u32 me)
{
	return akts_move_leftover(own, AKTS_DSQ_LC_FIFO) || akts_move_leftover(own, AKTS_DSQ_LC_VTIME) ||
	       akts_move_leftover(own, AKTS_DSQ_BE_FIFO) || akts_move_leftover(own, AKTS_DSQ_BE_VTIME) ||
	       akts_drain_private_leftovers(me);
}

/* Time p has run since it was last charged (prev's run so far, for a comparison before it is charged). */
static __always_inline u64 akts_uncharged_ns(struct task_struct *p, struct akts_task_ctx *tctx)
{
	u64 now = bpf_ktime_get_ns(), from;

	if (!tctx->running_at)
		return 0;
	from = tctx->vtime_charged_at > tctx->running_at ? tctx->vtime_charged_at : tctx->running_at;
	return now > from ? now - from : 0;
}

/* True if `me`'s own private queues may hold a task (its busy bit; akts.h, Hand-off). */
static __always_inline bool akts_own_private_queued(u32 me)
{
	struct akts_shared *sh = akts_shared_state();

	return me < AKTS_MAX_SLOTS && sh && (READ_ONCE(sh->busy_slots) & (1u << me)) &&
	       (scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(me, AKTS_PQ_FIFO0)) > 0 ||
		scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(me, AKTS_PQ_FIFO1)) > 0 ||
		scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(me, AKTS_PQ_VTIME0)) > 0 ||
		scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(me, AKTS_PQ_VTIME1)) > 0);
}

/*
 * ops.dispatch runs while the task whose slice just ended (prev) is still on
 * the CPU, before it is queued again. Consuming a DSQ then always picks one of
 * the *others*, so two tasks on a CPU strictly alternate whatever their
 * priority. A policy calls this to learn whether prev should simply go on:
 * true when it is still runnable, no leftover of another policy waits (see
 * akts_drain_leftovers) and nothing in the policy's own queues is ahead of it:
 * in FIFO order, nothing at all (shared queues and its slot's private ones); in virtual-time order (own queues
 * AKTS_DSQ_LC_VTIME and AKTS_DSQ_BE_VTIME, LC first), no LC task when prev is
 * BE and no task of prev's class with an earlier virtual time.
 */
static __always_inline bool akts_prev_goes_on(struct task_struct *prev, u32 own, u32 me, bool vtime_order)
{
	struct akts_task_ctx *tctx;
	struct task_struct *head;
	u64 dsq, vt;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return false;
	if (akts_leftovers_queued(own, me))
		return false;
	if (!vtime_order)
		return !akts_any_queued() && !akts_own_private_queued(me);
	if (akts_task_class(prev) == AKTS_CLASS_LC) {
		dsq = AKTS_DSQ_LC_VTIME;
	} else {
		if (scx_bpf_dsq_nr_queued(AKTS_DSQ_LC_VTIME) > 0)
			return false;
		dsq = AKTS_DSQ_BE_VTIME;
	}
	head = __COMPAT_scx_bpf_dsq_peek(dsq);
	if (!head)
		return true;
	/* prev's run so far is not charged yet (ops.stopping comes later). */
	tctx = akts_task_ctx(prev);
	if (!tctx)
		return true;
	vt = tctx->vtime + scale_by_task_weight_inverse(prev, akts_uncharged_ns(prev, tctx));
	return !time_before(head->scx.dsq_vtime, vt);
}

/* Moves the first task of a, else of b; true if one moved. */
static __always_inline bool akts_drain2(u64 a, u64 b)
{
	return scx_bpf_dsq_move_to_local(a, 0) || scx_bpf_dsq_move_to_local(b, 0);
}

/*
 * The fair virtual time (akts.h, Per-policy state): kept in the task's
 * context, so a policy that orders a vtime queue by another key cannot
 * corrupt it. A task without a context is inserted at the clock.
 */
static __always_inline u64 akts_fair_vtime(struct task_struct *p, u64 slice)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	struct akts_shared *sh = akts_shared_state();
	u64 now = sh ? sh->vtime_now : 0;
	u64 vtime = tctx ? tctx->vtime : now;

	/* A task that slept is charged at most one slice of budget: idling never buys unbounded priority. */
	if (time_before(vtime, now - slice))
		vtime = now - slice;
	if (tctx)
		tctx->vtime = vtime;
	return vtime;
}

/* Inserts into a vtime DSQ in fair order (the task's fair virtual time). */
static __always_inline void akts_insert_vtime(struct task_struct *p, u64 dsq, u64 slice,
					      u64 enq_flags)
{
	scx_bpf_dsq_insert_vtime(p, dsq, slice, akts_fair_vtime(p, slice), enq_flags);
}

/* Advances the shared virtual clock as tasks start running (racy by design, as in scx_simple). */
static __always_inline void akts_advance_vtime(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	struct akts_shared *sh = akts_shared_state();

	if (sh && tctx && time_before(sh->vtime_now, tctx->vtime))
		sh->vtime_now = tctx->vtime;
}

/*
 * Charges the time run since the run began or was last charged to the fair
 * virtual time, scaled by the inverse of the task's weight (nice). Called
 * when a run stops, and by a policy that lets prev go on (a refilled run gets
 * no ops.stopping), with akts_advance_vtime after it, so neither the task's
 * virtual time nor the clock stands still while one task runs on.
 */
static __always_inline void akts_charge_vtime(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	u64 now, from;

	if (!tctx || !tctx->running_at)
		return;
	now = bpf_ktime_get_ns();
	from = tctx->vtime_charged_at > tctx->running_at ? tctx->vtime_charged_at : tctx->running_at;
	if (now > from)
		tctx->vtime += scale_by_task_weight_inverse(p, now - from);
	tctx->vtime_charged_at = now;
}

#endif /* AKTS_COMMON_BPF_H */
