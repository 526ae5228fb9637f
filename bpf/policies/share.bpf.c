/* SPDX-License-Identifier: GPL-2.0 */
/*
 * share - a CPU-share target for the LC class (PeeR's fair-share colocation).
 *
 * What it does: two queues of its own in arrival order, one per class. It
 * counts the CPU time each class ran under it, decayed by half every
 * `window` (100 ms by default), and when both classes wait, a CPU takes the
 * class that is below its target: LC while LC's part of the counted time is
 * under `lc_share` (50% by default), else BE. A class alone takes what it
 * wants (work-conserving): the target binds only under contention. Every run
 * lasts at most `slice` (2 ms by default), cut when it starts if another
 * policy queued it with more. The counts are the policy's own and start
 * from zero whenever it is loaded.
 *
 * Limits: the share is of the time both classes ran under this policy, on
 * all CPUs together, not per CPU; it converges over a few windows and is
 * only as fine as the slice (a run is counted when it ends and at every
 * dispatch it goes on through; time that ends on another CPU during the
 * halving may go uncounted, and a run that began under another policy is
 * counted from its first dispatch here). A target of 0% starves LC whenever
 * BE waits (and the circuit breaker, which protects LC, trips). Time taken by higher
 * scheduling classes is not counted. No order within a class but
 * arrival; nice weights are not applied.
 *
 * When to pick it: colocation, where batch work must keep a stated part of
 * the CPUs however busy the LC service is (or the reverse), e.g. a 25% LC
 * share for an LLM server's tokenizer threads next to batch jobs.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 2000000, 100000, 100000000, "ns",
		       "the longest run before the classes are weighed again"),
	    AKTS_PARAM(1, "lc_share", AKTS_PARAM_PERCENT, 50, 0, 100, "%",
		       "the LC class's target share of the CPU time when both classes wait"),
	    AKTS_PARAM(2, "window", AKTS_PARAM_DURATION, 100000000, 10000000, 10000000000ull, "ns",
		       "the half-life of the counted CPU time"));
#define slice_ns akts_param(0)
#define lc_share akts_param(1)
#define window_ns akts_param(2)

/* CPU time per class under this policy, decayed (the policy's own state). */
struct share_state {
	u64 ran[AKTS_NR_CLASSES];
	u64 decayed_at;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct share_state);
} share_state SEC(".maps");

/* Per CPU: up to when the current run was counted (a run that goes on is counted at each dispatch). */
struct share_cpu {
	u64 counted_to;
	u32 pid;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct share_cpu);
} share_cpu SEC(".maps");

static __always_inline struct share_state *share_get(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&share_state, &zero);
}

/*
 * Adds the time p ran on this CPU since it was last counted to its class,
 * and halves the counts once per window (one CPU does, the compare-and-swap
 * picks it).
 */
static __always_inline void share_count(struct task_struct *p)
{
	struct share_state *st = share_get();
	u32 zero = 0;
	struct share_cpu *sc = bpf_map_lookup_elem(&share_cpu, &zero);
	u64 now = bpf_ktime_get_ns(), win = window_ns, at;

	struct akts_task_ctx *tctx = akts_task_ctx(p);

	if (!st || !sc)
		return;
	/* A record older than p's current run is another run's (one under another policy, never stopped here). */
	if (sc->pid != p->pid || !sc->counted_to || (tctx && sc->counted_to < tctx->running_at)) {
		/* A run that began under another policy (no share_running saw it): counted from here. */
		sc->pid = p->pid;
		sc->counted_to = now;
		return;
	}
	if (now <= sc->counted_to)
		return;
	__sync_fetch_and_add(&st->ran[akts_task_class(p)], now - sc->counted_to);
	sc->counted_to = now;
	at = READ_ONCE(st->decayed_at);
	if (now > at && now - at >= win && __sync_val_compare_and_swap(&st->decayed_at, at, now) == at) {
		WRITE_ONCE(st->ran[AKTS_CLASS_LC], READ_ONCE(st->ran[AKTS_CLASS_LC]) / 2);
		WRITE_ONCE(st->ran[AKTS_CLASS_BE], READ_ONCE(st->ran[AKTS_CLASS_BE]) / 2);
	}
}

s32 BPF_STRUCT_OPS(share_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return akts_select_idle_cpu(p, prev_cpu, wake_flags, slice_ns);
}

void BPF_STRUCT_OPS(share_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	akts_insert_own(p, akts_task_class(p) == AKTS_CLASS_LC ? 0 : 1, slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

/* True when LC is below its target share of the counted time. */
static __always_inline bool share_lc_due(void)
{
	struct share_state *st = share_get();
	u64 lc, be;

	if (!st)
		return true;
	lc = READ_ONCE(st->ran[AKTS_CLASS_LC]);
	be = READ_ONCE(st->ran[AKTS_CLASS_BE]);
	if (lc + be == 0)
		return lc_share > 0;
	/* Both factors are below 2^57 (decayed time) and 101: no overflow. */
	return lc * 100 < lc_share * (lc + be);
}

void BPF_STRUCT_OPS(share_dispatch, s32 cpu, struct task_struct *prev)
{
	bool lc_waits, be_waits, lc_due, prev_lc;

	akts_count_call(AKTS_CB_DISPATCH);
	lc_waits = scx_bpf_dsq_nr_queued(akts_own_fifo(0)) > 0;
	be_waits = scx_bpf_dsq_nr_queued(akts_own_fifo(1)) > 0;
	lc_due = share_lc_due();
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && !akts_leftovers_queued(0, akts_slot)) {
		/*
		 * prev goes on when none of its class waits (within a class, turns
		 * go round) and the other class either does not wait or is not due.
		 */
		share_count(prev); /* its run so far, before the classes are weighed */
		lc_due = share_lc_due();
		prev_lc = akts_task_class(prev) == AKTS_CLASS_LC;
		if (!(prev_lc ? lc_waits : be_waits) && (!(prev_lc ? be_waits : lc_waits) || prev_lc == lc_due)) {
			prev->scx.slice = slice_ns;
			return;
		}
	}
	if (akts_drain_leftovers(0, akts_slot))
		return;
	/* The due class first; the other if the due one has nobody waiting (work-conserving). */
	if (lc_due) {
		if (!scx_bpf_dsq_move_to_local(akts_own_fifo(0), 0))
			scx_bpf_dsq_move_to_local(akts_own_fifo(1), 0);
	} else {
		if (!scx_bpf_dsq_move_to_local(akts_own_fifo(1), 0))
			scx_bpf_dsq_move_to_local(akts_own_fifo(0), 0);
	}
}

AKTS_COUNT_ONLY(share, runnable)

void BPF_STRUCT_OPS(share_running, struct task_struct *p)
{
	u32 zero = 0;
	struct share_cpu *sc = bpf_map_lookup_elem(&share_cpu, &zero);

	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, slice_ns);
	if (sc) {
		sc->pid = p->pid;
		sc->counted_to = bpf_ktime_get_ns();
	}
}

void BPF_STRUCT_OPS(share_stopping, struct task_struct *p, bool runnable)
{
	u32 zero = 0;
	struct share_cpu *sc;

	akts_count_call(AKTS_CB_STOPPING);
	share_count(p);
	/* The run is over: a later run of this task under another policy must not be counted from here. */
	sc = bpf_map_lookup_elem(&share_cpu, &zero);
	if (sc) {
		sc->pid = 0;
		sc->counted_to = 0;
	}
}

AKTS_COUNT_ONLY(share, quiescent)

AKTS_POLICY_HOLDER(share, share);
