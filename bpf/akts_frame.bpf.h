/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The frame around a policy: the work every scheduling callback does whatever
 * policy runs (counters, wait-time stamps) and the lifecycle callbacks. The
 * dispatcher wraps the tail call in it; a stand-alone build of a policy
 * (bpf/standalone/) wraps a direct call in the very same code, so the two can
 * be compared like for like.
 *
 * -DAKTS_NO_COUNTERS compiles the counters and histograms out (the stamps a
 * policy needs stay), to measure what they cost.
 */
#ifndef AKTS_FRAME_BPF_H
#define AKTS_FRAME_BPF_H

#include "akts_common.bpf.h"

/* The override word (akts.h, "Selector"): BPF writes it, nothing else (read-only to system calls). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_RDONLY);
	__type(key, u32);
	__type(value, u32);
} akts_override SEC(".maps");

/*
 * The bounded-wait guard (akts.h, "Bounded wait"): the frame's own maps and
 * its periodic timer. Policies do not see these maps, so none can undo it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AKTS_MAX_QUEUES);
	__type(key, u32);
	__type(value, struct akts_queue);
} akts_queues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_guard_params);
} akts_guard_params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_guard_state);
} akts_guard_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_wait_max);
} akts_wait_max SEC(".maps");

/* The circuit breaker (akts.h, "Circuit breaker"): its settings and what it did. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_breaker_params);
} akts_breaker_params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_breaker_state);
} akts_breaker_state SEC(".maps");

/* The timer's scratch: the summed wait histogram (too large for the timer callback's stack). */
struct akts_breaker_scratch {
	u64 cur[AKTS_WAIT_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_breaker_scratch);
} akts_breaker_scratch SEC(".maps");

/* Per CPU: since when its SCHED_EXT task runs, since when its local DSQ is non-empty. */
struct akts_cpu_run {
	u64 running_at; /* when the current run began; 0: no SCHED_EXT task running */
	u64 counted_to; /* the current run's CPU time is in akts_cpu_stats.run_ns up to here */
	u64 local_since; /* the first firing that saw the local DSQ non-empty; 0: empty */
	/*
	 * A task that stopped with slice left and still runnable (a higher class
	 * took the CPU): when it resumes, its run goes on from running_at, so an
	 * interruption every few hundred microseconds does not keep the local
	 * check from seeing a run that has lasted rescue_slice_ns.
	 */
	s32 interrupted_pid;
	u32 pad;
	u64 run_ns;	/* CPU time of the current run so far (at ticks and its end), not the time away */
	/*
	 * The breaker's stall input measures the run the local DSQ waits behind
	 * from the first firing that saw that run with the queue non-empty:
	 * local_ran_at is that run's running_at, local_run0 its run_ns then. A
	 * run that ends (a finite slice) while the queue stays full hands the
	 * measure to the next run, so a never-ending run that follows is seen
	 * from its first firing, not hidden until the queue empties; but once
	 * the queue has been full for max_wait the guard kicks every run that
	 * has had rescue_slice_ns, so only a run that begins within about
	 * max_wait - oldest_ns - period_ns of the queue filling can reach the
	 * breaker's threshold (akts.h: what the local input does not see).
	 */
	u64 local_ran_at;
	u64 local_run0;
	/*
	 * The running_at of the run the guard's local check last kicked, until
	 * that run ends. A kick that lands while a higher class holds the CPU (a
	 * real-time task, an interrupt's thread) ends nothing: the kernel zeroes
	 * the slice of a sched_ext current only, and the interrupted run resumes
	 * with its own. akts_mark_running ends it as it resumes (and the frame's
	 * tick, the backstop, at its first tick).
	 */
	u64 kick_for;
	/*
	 * The current quantum (akts.h, Quantum timer): since when, how long
	 * (0: not known yet, read later from the task; SCX_SLICE_INF: never
	 * kicked), whose, and when the timer kicked it. Written by this CPU's
	 * callbacks, quantum_pid last (and cleared first); the timer on another
	 * CPU reads quantum_pid before and after the rest, and writes
	 * quantum_ns (the task's figure, akts_quantum_refine) and kicked_at. A
	 * race costs one kick too many or one too few.
	 */
	u64 quantum_from;
	u64 quantum_ns;
	u64 quantum_exec0; /* the task's sum_exec_runtime when the quantum began */
	u64 kicked_at;
	s32 quantum_pid;   /* 0 while the fields are being rewritten */
	u32 pad2;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_cpu_run);
} akts_cpu_run SEC(".maps");

/* A map holding a timer cannot be memory-mapped: the timer lives on its own. */
struct akts_guard_timer {
	struct bpf_timer timer;
	u64 due_ns; /* when the pending firing should happen */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_guard_timer);
} akts_guard_timer SEC(".maps");

extern int CONFIG_HZ __kconfig __weak;

#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC 1
#endif

static __always_inline u64 akts_clamp(u64 v, u64 dflt, u64 lo, u64 hi)
{
	if (!v)
		return dflt;
	return v < lo ? lo : v > hi ? hi : v;
}

static __always_inline u64 akts_guard_period(const struct akts_guard_params *gp)
{
	return akts_clamp(gp ? gp->period_ns : 0, AKTS_GUARD_DEFAULT_PERIOD_NS, 1000000, 1000000000);
}

static __always_inline struct akts_cpu_run *akts_cpu_run_here(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&akts_cpu_run, &zero);
}

/*
 * A CPU the task may be moved to without the kernel objecting: its current
 * CPU if allowed (no migration at all), else any allowed CPU unless it may not
 * migrate. -1 when there is none.
 */
static __always_inline s32 akts_guard_target_cpu(struct task_struct *p)
{
	const struct cpumask *online;
	s32 cpu = scx_bpf_task_cpu(p);
	u32 any;

	if (cpu >= 0 && bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return cpu;
	if (p->migration_disabled)
		return -1;
	/* Online only: a move to an offline CPU lands in the global DSQ, which the guard cannot see. */
	online = scx_bpf_get_online_cpumask();
	any = bpf_cpumask_any_and_distribute(p->cpus_ptr, online);
	scx_bpf_put_cpumask(online);
	return any < scx_bpf_nr_cpu_ids() ? (s32)any : -1;
}

struct akts_guard_scan {
	u64 now, max_wait, rescue_slice;
	u64 oldest[AKTS_NR_CLASSES];
	u64 waiting[AKTS_NR_CLASSES]; /* tasks of the class waiting in the registered queues */
	u64 scanned;
	u64 local_stuck; /* the longest a local DSQ has held tasks behind one run that never ended */
};

/* Rescues every task of registered queue `dsq` that has waited max_wait or more. */
static __always_inline void akts_guard_scan_queue(u64 dsq, struct akts_guard_scan *sc,
						  struct akts_guard_state *gs)
{
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		struct akts_task_ctx *tctx = bpf_task_storage_get(&akts_tasks, p, 0, 0);
		u32 cls;
		u64 age;
		s32 cpu;

		sc->scanned++;
		if (!tctx || !tctx->ready_at || sc->now <= tctx->ready_at)
			continue;
		age = sc->now - tctx->ready_at;
		cls = tctx->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
		sc->waiting[cls]++;
		if (age > sc->oldest[cls])
			sc->oldest[cls] = age;
		if (age < sc->max_wait)
			continue;
		cpu = akts_guard_target_cpu(p);
		if (cpu < 0) {
			__sync_fetch_and_add(&gs->rescue_failed, 1);
			continue;
		}
		/*
		 * To the head of that CPU's local DSQ; PREEMPT ends the current
		 * slice. Flagged first: once moved it may run (and stop) at once.
		 */
		tctx->flags |= AKTS_TASK_RESCUED;
		tctx->rescue_exec0 = 0;
		scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, sc->rescue_slice);
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL_ON | cpu, SCX_ENQ_PREEMPT))
			__sync_fetch_and_add(&gs->rescues[cls], 1);
		else
			tctx->flags &= ~AKTS_TASK_RESCUED;
	}
}

/* Preempts CPUs whose local DSQ has stayed non-empty for max_wait (akts.h). */
static __always_inline void akts_guard_local_dsqs(struct akts_guard_scan *sc, struct akts_guard_state *gs)
{
	u32 zero = 0;
	int *cpup;

	/* Possible CPUs only: a CPU id in a gap of the possible mask ejects the scheduler. */
	for_each_possible_cpu(cpup) {
		u32 cpu = *cpup;
		struct akts_cpu_run *run = bpf_map_lookup_percpu_elem(&akts_cpu_run, &zero, cpu);
		u64 ran_at;

		if (!run)
			continue;
		if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) <= 0) {
			run->local_since = 0;
			run->local_ran_at = 0;
			continue;
		}
		ran_at = READ_ONCE(run->running_at);
		if (!run->local_since)
			run->local_since = sc->now;
		/*
		 * The breaker's input: the CPU time one run has had while the
		 * queue stayed full behind it, since a firing first saw that run
		 * with the queue non-empty. CPU time, not elapsed time: a run that
		 * higher classes keep interrupting is not akts's stall.
		 */
		if (ran_at != run->local_ran_at) {
			u64 ran0 = READ_ONCE(run->run_ns);

			barrier();
			/* A run that began between the reads: its start is measured at the next firing. */
			if (READ_ONCE(run->running_at) == ran_at) {
				run->local_ran_at = ran_at;
				run->local_run0 = ran0;
			}
		} else if (ran_at) {
			u64 ran = READ_ONCE(run->run_ns);

			ran = ran > run->local_run0 ? ran - run->local_run0 : 0;
			if (ran > sc->local_stuck)
				sc->local_stuck = ran;
		}
		if (sc->now - run->local_since < sc->max_wait)
			continue;
		if (ran_at && sc->now > ran_at && sc->now - ran_at >= sc->rescue_slice) {
			WRITE_ONCE(run->kick_for, ran_at);
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
			__sync_fetch_and_add(&gs->local_kicks, 1);
		}
	}
}

static __always_inline void akts_kick_all_cpus(void)
{
	int *cpu;

	for_each_possible_cpu(cpu)
		scx_bpf_kick_cpu(*cpu, SCX_KICK_PREEMPT);
}

/*
 * The protected class's wait p99 in the window so far, as the upper edge of
 * its histogram bucket (0 with fewer than min_samples waits), and how many
 * waits ended in it. Summed over every CPU's counters.
 */
static __always_inline void akts_breaker_window(struct akts_breaker_state *bs, u32 cls, u64 min_samples,
						bool roll)
{
#ifndef AKTS_NO_COUNTERS
	u64 total = 0, seen = 0, d;
	u32 zero = 0, b;
	struct akts_breaker_scratch *sc = bpf_map_lookup_elem(&akts_breaker_scratch, &zero);
	u64 *cur;
	int *cpup;

	if (!sc)
		return;
	cur = sc->cur;
	bpf_for(b, 0, AKTS_WAIT_BUCKETS)
		cur[b] = 0;
	for_each_possible_cpu(cpup) {
		struct akts_cpu_stats *st = bpf_map_lookup_percpu_elem(&akts_stats, &zero, *cpup);

		if (!st)
			continue;
		bpf_for(b, 0, AKTS_WAIT_BUCKETS)
			cur[b] += st->wait_hist[cls & 1][b];
	}
	bpf_for(b, 0, AKTS_WAIT_BUCKETS)
		total += cur[b] > bs->win_hist0[b] ? cur[b] - bs->win_hist0[b] : 0;
	bs->win_samples = total;
	bs->win_p99_ns = 0;
	if (total && total >= min_samples) {
		bpf_for(b, 0, AKTS_WAIT_BUCKETS) {
			d = cur[b] > bs->win_hist0[b] ? cur[b] - bs->win_hist0[b] : 0;
			seen += d;
			/* The first bucket that holds the 99th percentile wait. */
			if (seen * 100 >= total * 99) {
				bs->win_p99_ns = 2ull << b;
				break;
			}
		}
	}
	if (roll)
		bpf_for(b, 0, AKTS_WAIT_BUCKETS)
			bs->win_hist0[b] = cur[b];
#endif
}

/* Whether what runs already is the safe slot (every index that names no slot runs the built-in default). */
static __always_inline bool akts_breaker_is_safe(u32 effective, u32 safe)
{
	if (safe >= AKTS_MAX_SLOTS)
		return effective >= AKTS_MAX_SLOTS;
	return effective == safe;
}

/*
 * The circuit breaker (akts.h, "Circuit breaker"), at every firing of the
 * guard's timer, after its scan: trips on the protected class's oldest
 * waiter, its wait p99, the guard's rescues of it or a stuck local DSQ, and
 * ends a trip after the cool-down once every input has been calm long enough.
 */
static __always_inline void akts_breaker_fire(struct akts_guard_scan *sc, struct akts_guard_state *gs)
{
	u32 zero = 0, cls, word;
	struct akts_breaker_params *bp = bpf_map_lookup_elem(&akts_breaker_params, &zero);
	struct akts_breaker_state *bs = bpf_map_lookup_elem(&akts_breaker_state, &zero);
	struct akts_selector *sel = bpf_map_lookup_elem(&akts_selector, &zero);
	u32 *ovr = bpf_map_lookup_elem(&akts_override, &zero);
	u64 oldest_thr, window, min_samples, cooldown, calm, oldest, rescued, acted, now = sc->now;
	u32 reason = AKTS_NR_TRIP_REASONS, effective, old;
	u64 value = 0, late = 0;
	bool roll, fresh, is_calm;

	if (!bp || !bs || !ovr)
		return;
	cls = bp->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
	oldest_thr = bp->oldest_ns ?: AKTS_BREAKER_DEFAULT_OLDEST_NS;
	window = bp->window_ns ?: AKTS_BREAKER_DEFAULT_WINDOW_NS;
	min_samples = bp->min_samples ?: AKTS_BREAKER_DEFAULT_MIN_SAMPLES;
	cooldown = bp->cooldown_ns ?: AKTS_BREAKER_DEFAULT_COOLDOWN_NS;
	calm = bp->calm_ns ?: AKTS_BREAKER_DEFAULT_CALM_NS;

	/* A new window every window_ns, and whenever another slot runs: what one policy did never trips another. */
	effective = akts_slot_from(sel, ovr);
	fresh = !bs->win_start_ns || effective != bs->win_slot || cls != bs->win_cls;
	roll = fresh || now - bs->win_start_ns >= window;
	if (bp->p99_ns || roll)
		akts_breaker_window(bs, cls, min_samples, roll);
	if (!bp->p99_ns) {
		bs->win_p99_ns = 0;
		bs->win_samples = 0;
	}
	/*
	 * Rescues of the class only. The guard's local-DSQ kicks are not counted:
	 * they go by elapsed time, any class, so in partial mode a CPU that
	 * higher classes keep busy makes them without any policy's fault.
	 */
	acted = gs->rescues[cls];
	/* Since the window began; at its time-based end still counted, in a fresh one not yet. */
	rescued = fresh ? 0 : acted > bs->win_rescues0 ? acted - bs->win_rescues0 : 0;
	oldest = sc->oldest[cls];

	/* The inputs, the most direct first. */
	if (oldest >= oldest_thr) {
		reason = AKTS_TRIP_OLDEST;
		value = oldest;
		late = oldest - oldest_thr;
	} else if (sc->local_stuck >= oldest_thr) {
		reason = AKTS_TRIP_LOCAL;
		value = sc->local_stuck;
		late = sc->local_stuck - oldest_thr;
	} else if (bp->rescues && rescued >= bp->rescues) {
		reason = AKTS_TRIP_RESCUES;
		value = rescued;
	} else if (bp->p99_ns && bs->win_p99_ns && (bs->win_p99_ns >> 1) > bp->p99_ns) {
		/* The bucket's lower edge is above the threshold: the p99 surely is. */
		reason = AKTS_TRIP_P99;
		value = bs->win_p99_ns;
	}
	is_calm = oldest < oldest_thr / 2 && sc->local_stuck < oldest_thr / 2 && !rescued &&
		  (!bp->p99_ns || !bs->win_p99_ns || bs->win_p99_ns <= bp->p99_ns);

	if (bs->tripped_at_ns) {
		if (!is_calm)
			bs->calm_since_ns = 0;
		else if (!bs->calm_since_ns)
			bs->calm_since_ns = now;
		if (now - bs->tripped_at_ns >= cooldown && bs->calm_since_ns && now - bs->calm_since_ns >= calm) {
			/* The word the trip replaced comes back, if the word is still the trip's. */
			__sync_val_compare_and_swap(ovr, bs->word, bs->prev_word);
			bs->tripped_at_ns = 0;
			bs->calm_since_ns = 0;
			bs->last_release_ns = now;
			bs->win_start_ns = 0; /* a fresh window for what runs now */
			akts_kick_all_cpus();
		}
	} else if (bp->armed && reason < AKTS_NR_TRIP_REASONS && !akts_breaker_is_safe(effective, bp->safe_slot)) {
		word = AKTS_OVERRIDE_ACTIVE | (bp->safe_slot < AKTS_MAX_SLOTS ? bp->safe_slot : AKTS_OVERRIDE_SLOT_MASK);
		old = READ_ONCE(*ovr);
		/* A word changed since it was read (the test's syscall program) is left for the next firing. */
		if (__sync_val_compare_and_swap(ovr, old, word) != old)
			return;
		bs->last_slot = effective;
		bs->word = word;
		bs->prev_word = old;
		bs->win_start_ns = 0;
		bs->tripped_at_ns = now;
		bs->last_trip_ns = now;
		bs->calm_since_ns = 0;
		bs->last_reason = reason;
		bs->last_value = value;
		bs->last_latency_ns = late;
		bs->trips++;
		bs->trips_by_reason[reason & 3]++;
		/* Every CPU runs the safe slot's callbacks from its next decision on. */
		akts_kick_all_cpus();
	}
	if (roll) {
		bs->win_start_ns = now;
		bs->win_rescues0 = acted;
		bs->win_slot = effective;
		bs->win_cls = cls;
	}
}

static int akts_guard_fire(void *map, int *key, struct akts_guard_timer *gt)
{
	u32 zero = 0, i;
	struct akts_guard_params *gp = bpf_map_lookup_elem(&akts_guard_params, &zero);
	struct akts_guard_state *gs = bpf_map_lookup_elem(&akts_guard_state, &zero);
	struct akts_guard_scan sc = {};
	u64 period = akts_guard_period(gp), end, took;

	sc.now = bpf_ktime_get_ns();
	if (gs && gp) {
		sc.max_wait = gp->max_wait_ns ? gp->max_wait_ns : AKTS_GUARD_DEFAULT_MAX_WAIT_NS;
		sc.rescue_slice = akts_clamp(gp->rescue_slice_ns, AKTS_GUARD_DEFAULT_RESCUE_SLICE_NS, 50000,
					     1000000000);
		if (gp->reset_gen != gs->reset_gen_seen) {
			gs->late_max_ns = 0;
			gs->run_ns_max = 0;
			gs->reset_gen_seen = gp->reset_gen;
		}
		if (gt->due_ns && sc.now > gt->due_ns && sc.now - gt->due_ns > gs->late_max_ns)
			gs->late_max_ns = sc.now - gt->due_ns;
		/* With the guard off (max_wait AKTS_GUARD_OFF) the scan only measures: no age reaches it. */
		bpf_for(i, 0, AKTS_MAX_QUEUES) {
			struct akts_queue *q = bpf_map_lookup_elem(&akts_queues, &i);

			if (!q || !q->dsq_id)
				continue;
			akts_guard_scan_queue(q->dsq_id, &sc, gs);
			/* The hand-off's backstop: a private queue that holds tasks is marked busy again. */
			if (q->owner < AKTS_MAX_SLOTS && scx_bpf_dsq_nr_queued(q->dsq_id) > 0)
				akts_mark_busy(q->owner);
		}
		akts_guard_local_dsqs(&sc, gs);
		akts_breaker_fire(&sc, gs);
		gs->oldest_wait_ns[AKTS_CLASS_BE] = sc.oldest[AKTS_CLASS_BE];
		gs->oldest_wait_ns[AKTS_CLASS_LC] = sc.oldest[AKTS_CLASS_LC];
		gs->waiting_sum[AKTS_CLASS_BE] += sc.waiting[AKTS_CLASS_BE];
		gs->waiting_sum[AKTS_CLASS_LC] += sc.waiting[AKTS_CLASS_LC];
		gs->scanned = sc.scanned;
		gs->tick_ns = CONFIG_HZ > 0 ? 1000000000ull / CONFIG_HZ : 0;
		gs->last_run_ns = sc.now;
		end = bpf_ktime_get_ns();
		took = end > sc.now ? end - sc.now : 0;
		gs->runs++;
		gs->run_ns_total += took;
		if (took > gs->run_ns_max)
			gs->run_ns_max = took;
	}
	/*
	 * Fixed rate: the next firing is due one period after this one was, so
	 * the scan's own run time does not stretch the period; a firing that is
	 * already late waits one period from now.
	 */
	end = bpf_ktime_get_ns();
	gt->due_ns = gt->due_ns && gt->due_ns + period > end ? gt->due_ns + period : end + period;
	bpf_timer_start(&gt->timer, gt->due_ns - end, 0);
	return 0;
}

/* Registry entry i: the shared DSQs first, then each slot's private queues (akts.h, Queues). */
static __always_inline void akts_queue_entry(u32 i, u64 *dsq, u32 *flags, u32 *owner)
{
	u32 q;

	if (i < AKTS_NR_DSQS) {
		*dsq = AKTS_DSQ_FIRST + i;
		*flags = (*dsq == AKTS_DSQ_LC_VTIME || *dsq == AKTS_DSQ_BE_VTIME) ? AKTS_QUEUE_VTIME : 0;
		*owner = AKTS_SLOT_NONE;
		return;
	}
	*owner = (i - AKTS_NR_DSQS) / AKTS_PRIVATE_QUEUES;
	q = (i - AKTS_NR_DSQS) % AKTS_PRIVATE_QUEUES;
	*dsq = AKTS_DSQ_PRIVATE(*owner, q);
	*flags = q >= AKTS_PQ_VTIME0 ? AKTS_QUEUE_VTIME : 0;
}

#define AKTS_NR_REGISTERED (AKTS_NR_DSQS + AKTS_MAX_SLOTS * AKTS_PRIVATE_QUEUES)

/* Registers the created DSQs and starts the guard (from the sleepable init). */
static __always_inline s32 akts_guard_start(void)
{
	u32 zero = 0, i;
	struct akts_guard_timer *gt;
	s32 ret;

	bpf_for(i, 0, AKTS_NR_REGISTERED) {
		u32 key = i, flags, owner;
		struct akts_queue *q = bpf_map_lookup_elem(&akts_queues, &key);
		u64 dsq;

		if (!q)
			return -ENOENT;
		akts_queue_entry(i, &dsq, &flags, &owner);
		q->flags = flags;
		q->owner = owner;
		q->dsq_id = dsq; /* last: the entry is live once the id is set */
	}
	gt = bpf_map_lookup_elem(&akts_guard_timer, &zero);
	if (!gt)
		return -ENOENT;
	ret = bpf_timer_init(&gt->timer, &akts_guard_timer, CLOCK_MONOTONIC);
	if (ret)
		return ret;
	ret = bpf_timer_set_callback(&gt->timer, akts_guard_fire);
	if (ret)
		return ret;
	gt->due_ns = bpf_ktime_get_ns() + AKTS_GUARD_DEFAULT_PERIOD_NS;
	return bpf_timer_start(&gt->timer, AKTS_GUARD_DEFAULT_PERIOD_NS, 0);
}

#ifndef AKTS_NO_COUNTERS
/* Counts the invocation and notes when this CPU first sees a new slot. */
static __always_inline void akts_count_entry(enum akts_callback cb, u32 k)
{
	struct akts_cpu_stats *st = akts_cpu_stats();

	if (!st)
		return;
	st->entries[cb]++;
	if (st->last_slot != k) {
		st->last_slot = k;
		st->slot_seen_ns = bpf_ktime_get_ns();
	}
}

static __always_inline void akts_count_fallthrough(enum akts_callback cb)
{
	struct akts_cpu_stats *st = akts_cpu_stats();

	if (st)
		st->fallthrough[cb]++;
}

static __always_inline u32 akts_log2(u64 v)
{
	u32 r = 0;

	/* Unrolled binary search: the verifier sees a fixed, short path. */
	if (v >= (1ULL << 32)) { v >>= 32; r += 32; }
	if (v >= (1ULL << 16)) { v >>= 16; r += 16; }
	if (v >= (1ULL << 8)) { v >>= 8; r += 8; }
	if (v >= (1ULL << 4)) { v >>= 4; r += 4; }
	if (v >= (1ULL << 2)) { v >>= 2; r += 2; }
	if (v >= (1ULL << 1)) { r += 1; }
	return r;
}

#else
static __always_inline void akts_count_entry(enum akts_callback cb, u32 k) {}
static __always_inline void akts_count_fallthrough(enum akts_callback cb) {}
#endif

/* The quantum timer (akts.h, Quantum timer). Its own map: one timer per map value. */
struct akts_quantum_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_quantum_timer);
} akts_quantum_timer SEC(".maps");

static __always_inline u64 akts_quantum_period(void)
{
	u32 zero = 0;
	struct akts_guard_params *gp = bpf_map_lookup_elem(&akts_guard_params, &zero);
	u64 v = gp ? gp->quantum_period_ns : 0;

	if (!v)
		return 0;
	return v < AKTS_QUANTUM_MIN_PERIOD_NS ? AKTS_QUANTUM_MIN_PERIOD_NS :
	       v > AKTS_QUANTUM_MAX_PERIOD_NS ? AKTS_QUANTUM_MAX_PERIOD_NS : v;
}

/*
 * The quantum's length as the task has it now: what is left of its slice plus
 * what was charged to it since the quantum began (the kernel takes both from
 * one update, at ticks and at the end of a run). Read lazily, after the
 * policy's ops.running or ops.dispatch has set the slice. 0: none given yet.
 */
static __always_inline u64 akts_quantum_len(struct task_struct *p, u64 exec0)
{
	u64 slice = p->scx.slice, ran = p->se.sum_exec_runtime;

	if (!slice)
		return 0;
	if (slice == SCX_SLICE_INF)
		return SCX_SLICE_INF;
	return slice + (ran > exec0 ? ran - exec0 : 0);
}

/*
 * The quantum's length, refined from the task: a policy may have changed the
 * slice in ops.running (after the frame noted it) or refilled it in
 * ops.dispatch (the frame noted 0), and the guard or the breaker may cut it
 * at a tick; the task's own figure wins whenever it is known (its slice is
 * not 0). A racing read is put right at the next firing or tick.
 */
static __always_inline u64 akts_quantum_refine(struct akts_cpu_run *run, struct task_struct *p, u64 q, u64 exec0)
{
	u64 len = akts_quantum_len(p, exec0);

	if (len && len != q) {
		__sync_val_compare_and_swap(&run->quantum_ns, q, len);
		q = len;
	}
	return q;
}

/* Kicks every CPU whose run has had its quantum; learns quanta from the running task. */
static int akts_quantum_fire(void *map, int *key, struct akts_quantum_timer *qt)
{
	u64 period = akts_quantum_period(), now;
	u32 zero = 0;
	int *cpup;
#ifndef AKTS_NO_COUNTERS
	/* Counted in memory as it goes: a counter on the stack would keep the verifier from pruning the loop. */
	struct akts_cpu_stats *st = akts_cpu_stats();
#endif

	if (!period) {
		bpf_timer_start(&qt->timer, AKTS_QUANTUM_IDLE_POLL_NS, 0);
		return 0;
	}
	now = bpf_ktime_get_ns();
	for_each_possible_cpu(cpup) {
		u32 cpu = *cpup;
		struct akts_cpu_run *run = bpf_map_lookup_percpu_elem(&akts_cpu_run, &zero, cpu);
		struct task_struct *curr;
		u64 q, from, exec0;
		s32 pid;

		if (!run || !READ_ONCE(run->running_at))
			continue;
		pid = READ_ONCE(run->quantum_pid);
		/* None, or its run was interrupted by a higher class (it may have left sched_ext since). */
		if (!pid || READ_ONCE(run->interrupted_pid) == pid)
			continue;
		/* Only the quantum's own task, running now: never an idle CPU or a higher class's task. */
		curr = __COMPAT_scx_bpf_cpu_curr(cpu);
		if (!curr || curr->pid != pid)
			continue;
		q = READ_ONCE(run->quantum_ns);
		from = READ_ONCE(run->quantum_from);
		exec0 = READ_ONCE(run->quantum_exec0);
		barrier();
		if (READ_ONCE(run->quantum_pid) != pid)
			continue; /* rewritten meanwhile */
		q = akts_quantum_refine(run, curr, q, exec0);
		if (!q || q == SCX_SLICE_INF || now <= from || now - from < q)
			continue;
		/* Kicked already: once more only if the CPU has not acted for another quantum. */
		if (run->kicked_at && now - run->kicked_at < q)
			continue;
		run->kicked_at = now;
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
#ifndef AKTS_NO_COUNTERS
		if (st)
			__sync_fetch_and_add(&st->quantum_kicks, 1);
#endif
	}
	bpf_timer_start(&qt->timer, period, 0);
	return 0;
}

/*
 * A quantum of p begins now: as long as the slice p has now (0 in dispatch,
 * before a refill), refined later from the task (akts_quantum_refine).
 */
static __always_inline void akts_quantum_begin(struct akts_cpu_run *run, struct task_struct *p, u64 now)
{
	WRITE_ONCE(run->quantum_pid, 0);
	barrier();
	run->kicked_at = 0;
	run->quantum_exec0 = p->se.sum_exec_runtime;
	WRITE_ONCE(run->quantum_from, now);
	WRITE_ONCE(run->quantum_ns, p->scx.slice);
	barrier();
	WRITE_ONCE(run->quantum_pid, p->pid);
}

/*
 * p's slice ran out (ops.dispatch with p still runnable and no slice left,
 * or ops.stopping when dispatch did not run because the local DSQ held a
 * task): counts how far past its quantum it ran, or that it was cut short
 * (a kick by the guard, the breaker, a switch or a policy, or a yield), and
 * starts the next quantum, which counts only if a policy refills p's slice
 * (ops.stopping otherwise ends the run). Each quantum is counted once, by
 * the length a firing or a tick last read from the task (its slice is 0
 * here); a quantum whose length was never read is not counted.
 */
static __always_inline void akts_quantum_end(struct akts_cpu_run *run, struct task_struct *p)
{
	u64 now, q, from;

	if (!run || !run->running_at || run->quantum_pid != p->pid)
		return;
	now = bpf_ktime_get_ns();
	q = run->quantum_ns;
	from = run->quantum_from;
	akts_quantum_begin(run, p, now);
#ifndef AKTS_NO_COUNTERS
	struct akts_cpu_stats *st = akts_cpu_stats();
	u64 over;
	u32 b;

	if (!st || !q || q == SCX_SLICE_INF || now <= from)
		return;
	if (now - from < q) {
		st->quantum_cut++;
		return;
	}
	over = now - from - q;
	b = over ? akts_log2(over) : 0;
	if (b >= AKTS_WAIT_BUCKETS)
		b = AKTS_WAIT_BUCKETS - 1;
	st->quantum_ends++;
	st->quantum_hist[b]++;
	st->quantum_overrun_ns += over;
	if (over > st->quantum_overrun_max_ns)
		st->quantum_overrun_max_ns = over;
#else
	(void)q;
	(void)from;
#endif
}

static __always_inline s32 akts_quantum_start(void)
{
	u32 zero = 0;
	struct akts_quantum_timer *qt = bpf_map_lookup_elem(&akts_quantum_timer, &zero);
	s32 ret;

	if (!qt)
		return -ENOENT;
	ret = bpf_timer_init(&qt->timer, &akts_quantum_timer, CLOCK_MONOTONIC);
	if (ret)
		return ret;
	ret = bpf_timer_set_callback(&qt->timer, akts_quantum_fire);
	if (ret)
		return ret;
	return bpf_timer_start(&qt->timer, akts_quantum_period() ?: AKTS_QUANTUM_IDLE_POLL_NS, 0);
}

/* Stamps the moment a task became ready to run (kept if already stamped). */
static __always_inline void akts_mark_ready(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);

	if (!tctx)
		return;
	/* At every enqueue too: a CPU-bound task that never sleeps takes a new class at its next slice's end. */
	tctx->cls = akts_lookup_class(p);
	if (!tctx->ready_at)
		tctx->ready_at = bpf_ktime_get_ns();
}

/*
 * ops.dispatch, before the policy's: a task that a policy lets go on is
 * never enqueued again, so prev's class is refreshed here (a CPU-bound task
 * takes a new class at its next slice's end whatever the policy does); and
 * prev's quantum ended here if its slice ran out (akts_quantum_end).
 *
 * True when the frame answers the dispatch itself and the policy must not be
 * asked: a rescued run that something ended before it had its rescue slice
 * of CPU time (a kick meant for the run before it, which landed late; a
 * switch's, the breaker's or a policy's kick; a yield) goes on for what is
 * left of it, so each rescue buys the starved task its rescue slice of
 * progress. The tick still ends it there (akts_frame_tick). The policy is
 * not asked, or the tasks it moved to this CPU would wait behind the run
 * where no other CPU can take them. Only when this CPU's local DSQ is empty:
 * otherwise the kernel runs its head without calling ops.dispatch.
 */
static __always_inline bool akts_frame_dispatch(struct task_struct *prev)
{
	struct akts_guard_params *gp;
	struct akts_task_ctx *tctx;
	u64 cap, used, sum;
	u32 zero = 0;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return false;
	tctx = akts_task_ctx(prev);
	if (tctx)
		tctx->cls = akts_lookup_class(prev);
	if (prev->scx.slice)
		return false;
	akts_quantum_end(akts_cpu_run_here(), prev);
	if (!tctx || !(tctx->flags & AKTS_TASK_RESCUED) || !tctx->rescue_exec0)
		return false;
	gp = bpf_map_lookup_elem(&akts_guard_params, &zero);
	cap = akts_clamp(gp ? gp->rescue_slice_ns : 0, AKTS_GUARD_DEFAULT_RESCUE_SLICE_NS, 50000, 1000000000);
	sum = prev->se.sum_exec_runtime;
	used = sum > tctx->rescue_exec0 ? sum - tctx->rescue_exec0 : 0;
	if (used >= cap)
		return false;
	prev->scx.slice = cap - used;
	return true;
}

/* Records how long the task waited, per class, and when it started running. */
static __always_inline void akts_mark_running(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	struct akts_cpu_run *run = akts_cpu_run_here();
	struct akts_wait_max *wm;
	u64 now = bpf_ktime_get_ns(), wait;
	u32 zero = 0, c;

	if (run) {
		if (run->interrupted_pid && run->interrupted_pid == p->pid && run->running_at) {
			run->counted_to = now; /* the run goes on: the time away was not its own */
			/*
			 * The guard's local check kicked this run while a higher
			 * class held the CPU, which ended nothing: end it now.
			 */
			if (READ_ONCE(run->kick_for) == run->running_at) {
				struct akts_guard_state *gs;

				run->kick_for = 0;
				p->scx.slice = 0;
				scx_bpf_kick_cpu(bpf_get_smp_processor_id(), SCX_KICK_PREEMPT);
				gs = bpf_map_lookup_elem(&akts_guard_state, &zero);
				if (gs)
					__sync_fetch_and_add(&gs->local_kicks_finished, 1);
			}
		} else {
			/*
			 * run_ns first: the guard's timer on another CPU reads
			 * running_at, then run_ns, then running_at again, and
			 * must never pair this run with the last run's time.
			 */
			WRITE_ONCE(run->run_ns, 0);
			akts_quantum_begin(run, p, now);
			barrier();
			WRITE_ONCE(run->running_at, now);
		}
		run->interrupted_pid = 0;
	}
	if (!tctx)
		return;
	tctx->running_at = now;
	/* A rescued run's cap counts CPU time from its first start (akts_frame_tick). */
	if ((tctx->flags & AKTS_TASK_RESCUED) && !tctx->rescue_exec0)
		tctx->rescue_exec0 = p->se.sum_exec_runtime ?: 1;
	if (!tctx->ready_at)
		return;
	/* The longest wait is exact and kept even without counters: the guard's proof. */
	wait = now > tctx->ready_at ? now - tctx->ready_at : 0;
	c = tctx->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
	wm = bpf_map_lookup_elem(&akts_wait_max, &zero);
	if (wm && wait > wm->max_ns[c]) {
		wm->max_ns[c] = wait;
		wm->pid[c] = p->pid;
	}
#ifndef AKTS_NO_COUNTERS
	struct akts_cpu_stats *st = akts_cpu_stats();
	u32 b, cls;

	if (st) {
		b = akts_log2(now > tctx->ready_at ? now - tctx->ready_at : 0);
		if (b >= AKTS_WAIT_BUCKETS)
			b = AKTS_WAIT_BUCKETS - 1;
		cls = tctx->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
		st->wait_hist[cls][b]++;
		st->wait_ns[cls] += wait;
	}
#endif
	tctx->ready_at = 0;
}

/*
 * Adds the current run's CPU time since it was last counted to its class
 * (akts_cpu_stats.run_ns): at every tick and when the run ends, so a long
 * run shows in every window it spans, not in one lump at its end.
 */
static __always_inline void akts_count_run(struct akts_cpu_run *run, struct akts_task_ctx *tctx)
{
	u64 now = bpf_ktime_get_ns(), from;

	if (!run || !run->running_at)
		return;
	from = run->counted_to > run->running_at ? run->counted_to : run->running_at;
	if (now > from) {
		run->run_ns += now - from; /* the breaker's stall input, kept without counters too */
#ifndef AKTS_NO_COUNTERS
		struct akts_cpu_stats *st = akts_cpu_stats();

		if (st)
			st->run_ns[tctx->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE] += now - from;
#endif
	}
	run->counted_to = now;
}

/*
 * This CPU no longer runs p (ops.stopping). A rescue ends with the run it
 * bought, but not when a higher scheduling class only interrupts it: then p
 * keeps its slice and goes back to the head of its local DSQ (runnable with
 * slice left), and its policy would hand it an infinite slice again when it
 * resumes, which the tick must still cap, or a second rescued task queued
 * behind it would wait for the local-DSQ check (a wait of twice the bound).
 */
static __always_inline void akts_mark_stopping(struct task_struct *p, bool runnable)
{
	struct akts_cpu_run *run = akts_cpu_run_here();
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	bool interrupted = runnable && p->scx.slice;

	/* A task going to sleep ends its rescue in ops.quiescent (akts_mark_quiescent). */
	if (tctx) {
		if (!p->scx.slice) {
			tctx->flags &= ~AKTS_TASK_RESCUED;
			tctx->rescue_exec0 = 0;
		}
		akts_count_run(run, tctx);
	}
	if (run) {
		/* A slice that ran out with no dispatch before (a task waited in the local DSQ). */
		if (runnable && !p->scx.slice)
			akts_quantum_end(run, p);
		run->interrupted_pid = interrupted ? p->pid : 0;
		if (!interrupted) {
			run->kick_for = 0; /* the run a kick was meant for ended */
			run->running_at = 0;
			WRITE_ONCE(run->quantum_pid, 0); /* the run's quantum is over: nothing for the timer */
		}
	}
}

/* ops.quiescent: a task that sleeps has ended whatever rescued run it had. */
static __always_inline void akts_mark_quiescent(struct task_struct *p, u64 deq_flags)
{
	struct akts_task_ctx *tctx;

	if (!(deq_flags & SCX_DEQ_SLEEP))
		return;
	tctx = akts_task_ctx(p);
	if (tctx) {
		tctx->flags &= ~AKTS_TASK_RESCUED;
		tctx->rescue_exec0 = 0;
	}
}

/*
 * ops.tick, never dispatched to a policy: counts the running task's CPU time
 * so far, and a rescued task's slice ends after
 * the rescue slice even if its policy gave it more (an infinite slice, say),
 * so the next task waiting in that CPU's local DSQ (another rescue) runs. If
 * none waits there, the policy's dispatch may let it go on as an ordinary run.
 */
static __always_inline void akts_frame_tick(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	struct akts_guard_params *gp;
	struct akts_breaker_state *bs;
	struct akts_cpu_run *run = akts_cpu_run_here();
	u32 zero = 0;
	u64 cap;

	if (!tctx)
		return;
	akts_count_run(run, tctx);
	/* The quantum's length as the policy set it, while the slice still shows it. */
	if (run && run->quantum_pid == p->pid)
		akts_quantum_refine(run, p, run->quantum_ns, run->quantum_exec0);
	/* The backstop of a kick that went on (akts_mark_running ends it on resuming). */
	if (run && run->running_at && READ_ONCE(run->kick_for) == run->running_at) {
		struct akts_guard_state *gs = bpf_map_lookup_elem(&akts_guard_state, &zero);

		run->kick_for = 0;
		p->scx.slice = 0;
		if (gs)
			__sync_fetch_and_add(&gs->local_kicks_finished, 1);
	}
	/* While the breaker holds the safe slot, no run left by the culprit goes on past a short slice. */
	bs = bpf_map_lookup_elem(&akts_breaker_state, &zero);
	if (bs && bs->tripped_at_ns && p->scx.slice > AKTS_BREAKER_SLICE_NS)
		p->scx.slice = AKTS_BREAKER_SLICE_NS;
	if (!(tctx->flags & AKTS_TASK_RESCUED) || !tctx->rescue_exec0)
		return;
	gp = bpf_map_lookup_elem(&akts_guard_params, &zero);
	cap = akts_clamp(gp ? gp->rescue_slice_ns : 0, AKTS_GUARD_DEFAULT_RESCUE_SLICE_NS, 50000, 1000000000);
	/* CPU time since the rescued run began, across interruptions by higher classes. */
	if (p->se.sum_exec_runtime > tctx->rescue_exec0 && p->se.sum_exec_runtime - tctx->rescue_exec0 >= cap) {
		p->scx.slice = 0;
		tctx->flags &= ~AKTS_TASK_RESCUED;
		tctx->rescue_exec0 = 0;
	}
}

static __always_inline s32 akts_frame_init_task(struct task_struct *p, struct scx_init_task_args *args)
{
	struct akts_task_ctx *tctx;

	tctx = bpf_task_storage_get(&akts_tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	/*
	 * A new process inherits its parent's class at once; the daemon's rules
	 * may refine it at its next scan. Threads share their process's entry.
	 */
	if (args->fork && p->pid == p->tgid) {
		/*
		 * The forking task is current. Not p->real_parent: at this point of
		 * copy_process() it still holds the forker's own parent, copied with
		 * the task struct, so reading it skipped a generation.
		 */
		u32 tgid = p->tgid, ptgid = bpf_get_current_pid_tgid() >> 32;
		u32 *pcls = bpf_map_lookup_elem(&akts_classes, &ptgid);

		if (pcls && !bpf_map_lookup_elem(&akts_classes, &tgid))
			bpf_map_update_elem(&akts_classes, &tgid, pcls, BPF_NOEXIST);
	}
	tctx->cls = akts_lookup_class(p);
	return 0;
}

/*
 * A process's class goes with its last thread, not with its leader: a leader
 * may exit (pthread_exit in main) while its other threads run on. Every
 * exiting thread has already left signal->live, so the last one sees 0.
 * A cancelled fork's new process goes too.
 */
static __always_inline void akts_frame_exit_task(struct task_struct *p, struct scx_exit_task_args *args)
{
	u32 tgid = p->tgid;

	/* A fork that failed after init_task never ran: drop what it inherited. */
	if ((args->cancelled && p->pid == p->tgid) || BPF_CORE_READ(p, signal, live.counter) == 0)
		bpf_map_delete_elem(&akts_classes, &tgid);
}

static __always_inline void akts_frame_enable(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	struct akts_shared *sh = akts_shared_state();
	u64 now = sh ? sh->vtime_now : 0;

	scx_bpf_task_set_dsq_vtime(p, now);
	if (tctx)
		tctx->vtime = now;
}

/* A task that leaves SCHED_EXT while queued is not waiting for akts any more; its hint goes (akts.h, Hints). */
static __always_inline void akts_frame_disable(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	u32 tid = p->pid;

	bpf_map_delete_elem(&akts_hints, &tid);
	if (tctx) {
		tctx->ready_at = 0;
		tctx->flags &= ~AKTS_TASK_RESCUED;
		tctx->rescue_exec0 = 0;
	}
}

/*
 * Every shared DSQ and every slot's private queues exist, and are registered,
 * before any policy runs; then the guard starts (init is sleepable).
 */
static __always_inline s32 akts_frame_init(void)
{
	u32 i, flags, owner;
	u64 dsq;
	s32 ret;

	bpf_for(i, 0, AKTS_NR_REGISTERED) {
		akts_queue_entry(i, &dsq, &flags, &owner);
		ret = scx_bpf_create_dsq(dsq, -1);
		if (ret) {
			scx_bpf_error("akts: cannot create DSQ 0x%llx (%d)", dsq, ret);
			return ret;
		}
	}
	ret = akts_guard_start();
	if (ret) {
		scx_bpf_error("akts: cannot start the bounded-wait guard (%d)", ret);
		return ret;
	}
	ret = akts_quantum_start();
	if (ret)
		scx_bpf_error("akts: cannot start the quantum timer (%d)", ret);
	return ret;
}

#endif /* AKTS_FRAME_BPF_H */
