/* SPDX-License-Identifier: GPL-2.0 */
/*
 * preempt - a latency-critical (LC) task that wakes takes a CPU from batch work at once.
 *
 * What it does: a waking task goes straight to an idle CPU when there is one
 * (the kernel's idle pick). Otherwise LC tasks queue on a vtime-ordered LC
 * queue that is always drained before best-effort (BE) work, as under
 * `latency`, and an LC task that wakes with no idle CPU allowed to it
 * preempts a BE task at once: it picks a victim CPU in its cpus_ptr whose
 * current task is a sched_ext BE task (its previous CPU first, for the cache,
 * then up to PREEMPT_SCAN others), claims it with a compare-and-swap on the
 * victim's last-claim time (two wakers never pick one victim, and a victim is
 * preempted at most once per `preempt_gap`), and ends the victim's run now
 * (sched_ext enforces slices only at the tick, 4 ms on the pinned kernels:
 * without this, a waking LC task waits for the running BE task's slice to
 * end, which is what `latency` does). Where the task goes, and how:
 * - With no LC task queued ahead of it (nor any task another policy left
 *   behind), into the victim's local DSQ with SCX_ENQ_PREEMPT: the kernel
 *   zeroes the victim CPU's current sched_ext run's slice and reschedules
 *   that CPU as the task lands (on the waker's own CPU, as for a timer's
 *   wake-up, with no interrupt; on another with one IPI), where a kick
 *   would add an irq_work interrupt on the kicking CPU (what that costs
 *   under emulation: docs/policies.md). SCX_ENQ_PREEMPT
 *   inserts at the DSQ's head; the DSQ was empty at the claim (a CPU whose
 *   local DSQ holds a task is no victim), so the task passes only one that
 *   reached it in between (a guard rescue, a task the kernel put back
 *   there), by one `slice`: akts.h's one exception to tail inserts, with
 *   the bound it costs. ops.select_cpu does this when it finds no idle CPU,
 *   by returning the victim with the task inserted into SCX_DSQ_LOCAL, so
 *   ops.enqueue is not called; ops.enqueue does it (SCX_DSQ_LOCAL_ON |
 *   victim) for a wake-up select_cpu did not see (a task allowed one CPU;
 *   on 6.12-6.14 also one with migration disabled: from 6.15 the kernel
 *   queues such a task on its CPU without ops.enqueue, as the frame does not
 *   set SCX_OPS_ENQUEUE_MIGRATION_DISABLED, so it waits as under `latency`)
 *   or that found no victim then. The victim
 *   runs the task next without calling ops.dispatch (one callback less per
 *   preemption: under emulation a dispatch costs several others, 15.5 us
 *   against 1-7 us: docs/benchmarks.md). The BE run it cut goes back into
 *   the BE queue.
 * - Else into the LC queue, and the victim is kicked with SCX_KICK_PREEMPT,
 *   which ends its running slice; its dispatch finds LC waiting, so it lets
 *   no BE prev go on and takes the LC task with the earliest virtual time
 *   (or another CPU took it first: the BE task goes on, one context switch
 *   lost).
 *
 * The victim: what this policy's ops.running saw start on that CPU (its
 * pid, and whether it is a BE run and not a guard rescue), cleared by
 * ops.stopping, and still the CPU's current task (scx_bpf_cpu_curr) whose
 * process is still BE: so a CPU that runs a higher class (in partial mode
 * the fair class outranks SCHED_EXT, and sched_ext cannot preempt it), an
 * LC task or an idle CPU is not a victim, nor a BE task in a rescued run (a
 * rescue buys a starved task its rescue slice of progress), nor a CPU
 * whose local DSQ holds a task (a rescue on its way in, or a task that will
 * run next anyway). The preemption lands a moment after the claim: the
 * hand-off's as the task lands in the victim's local DSQ (during the
 * wake-up, under the victim's run queue lock; for ops.enqueue's insert into
 * another CPU's DSQ, once the waker's run queue is unlocked), the kick's
 * once the kicking CPU's interrupts are on again (when that is the victim
 * itself, nothing runs there in between). It ends whatever sched_ext run
 * is current then. If that is no longer the victim, the waste is one context switch,
 * and what the cut run loses depends on where the waking task went:
 * queued, a rescued run goes on (the frame refills it: akts.h, Bounded
 * wait) and an LC run goes on unless an LC task with an earlier virtual
 * time waits; in the local DSQ, the cut run is queued again and the waking
 * task runs first (a rescue then ends early, as akts.h says of a local DSQ
 * that holds a task; the claim's check of that DSQ leaves only a rescue
 * that began between the claim and the preemption). If a higher class took
 * the victim CPU in between, the kernel put the BE run back at the head of
 * its local DSQ with its slice, and the hand-off lands ahead of it: the
 * waking task runs first and the BE run after it, without ops.enqueue, for
 * `slice` (below) (the one way a cut run still resumes in its local DSQ,
 * and then goes before an LC task whose slice ends). If the victim went
 * offline or inactive in between, the kernel puts the task elsewhere: the
 * select_cpu hand-off on the CPU the kernel falls back to, which no claim
 * checked, and ops.enqueue's on the global DSQ, which no CPU drains first;
 * hotplug is rare enough that neither is guarded. An entry
 * written before a switch away and back can name a run that began under
 * another policy; its class is checked again at the claim, its rescue by
 * the frame.
 *
 * Slices: LC tasks get `slice` (1 ms). BE tasks get `be_slice` (20 ms)
 * when no LC task waits, so batch work loses only what LC uses plus one
 * preemption per LC wake-up; a BE run that begins (or goes on) while LC
 * tasks wait (in the LC queue, or any task in its CPU's local DSQ), or on a
 * CPU preempted less than `preempt_gap` ago, gets `slice` instead: an LC
 * task behind it, or one that wakes inside the gap, waits for that
 * slice to end, which the kernel sees at a tick (up to `slice` plus a tick;
 * the frame's quantum timer's period instead of the tick when it is on).
 * A task that slept is charged at most `slice` of vtime budget, in both
 * classes, as under `latency`.
 *
 * Limits: LC strictly precedes BE, and LC runs weighted vtime within its
 * class, so a CPU-bound LC process holds batch work back to what the frame's
 * bounded-wait guard grants it (a rescue slice about every max_wait), as
 * under `latency`; only a wake-up preempts, never an LC task whose slice
 * ended, so a CPU-bound LC task takes no CPU from BE beyond those it already
 * holds. Each preemption costs a context switch, and an interrupt unless it
 * is a hand-off on the waker's own CPU: LC that wakes
 * very often (tens of thousands of times a second) and runs very briefly
 * pays more in switches than it gains; `preempt_gap` bounds the
 * preemptions to one per victim per gap (10 us at least: with none, two
 * wakers could claim one victim, and akts.h's exception counts on the gap).
 * What a BE task is sure of is where it starts, within the frame's bound,
 * not how long it runs: an LC task that runs longer than the gap and sleeps
 * for moments can cut a BE run each time it wakes, so BE then gets the
 * moments between a sleep and the next wake-up (a guard rescue restarts
 * nothing: each run that begins resets the task's wait). The victim scan looks at the
 * task's previous CPU and up to PREEMPT_SCAN others, first fit, not the
 * best victim. `kick` 0 turns the preemption off (for tests: LC then waits
 * for the BE task's long slice to end).
 *
 * When to pick it: a node where LC work (an LLM server's per-token CPU work)
 * shares CPUs with batch work and its wake-ups must not wait for a tick.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 1000000, 100000, 100000000, "ns",
		       "the slice of an LC task, and of a BE run that begins while LC waits"),
	    AKTS_PARAM(1, "be_slice", AKTS_PARAM_DURATION, 20000000, 100000, 1000000000, "ns",
		       "the slice of a BE task while no LC task waits; long, for warm caches"),
	    AKTS_PARAM(2, "preempt_gap", AKTS_PARAM_DURATION, 250000, 10000, 100000000, "ns",
		       "a CPU is preempted for a waking LC task at most once per this (10 us at least)"),
	    AKTS_PARAM(3, "kick", AKTS_PARAM_BOOL, 1, 0, 1, "",
		       "1: a waking LC task preempts BE at once; 0: it waits for the slice (tests)"));
#define lc_slice_ns akts_param(0) /* `slice`: every library policy's first parameter is its slice */
#define be_slice_ns akts_param(1)
#define preempt_gap_ns akts_param(2)
#define kick_on akts_param(3)

#define PREEMPT_OWN (AKTS_OWN(AKTS_DSQ_LC_VTIME) | AKTS_OWN(AKTS_DSQ_BE_VTIME))
#define PREEMPT_MAX_CPUS 4096
/* CPUs looked at for a victim besides the task's previous one: a wake-up's cost stays bounded on a big machine. */
#define PREEMPT_SCAN 32

/* What this policy saw start on a CPU (indexed by CPU; the policy's own state). */
struct preempt_cpu {
	s32 pid;	 /* the run this policy's ops.running saw begin; 0: none (stopped, or never seen) */
	u32 victim;	 /* 1: a BE run, not a guard rescue: a waking LC task may preempt it */
	u64 claimed_at;	 /* when a waker last claimed this CPU (bpf_ktime_get_ns); 0: never */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PREEMPT_MAX_CPUS);
	__type(key, u32);
	__type(value, struct preempt_cpu);
} preempt_cpus SEC(".maps");

static __always_inline struct preempt_cpu *preempt_cpu_of(s32 cpu)
{
	u32 key = cpu;

	if (cpu < 0 || cpu >= PREEMPT_MAX_CPUS)
		return NULL;
	return bpf_map_lookup_elem(&preempt_cpus, &key);
}

static __always_inline bool preempt_lc_waits(void)
{
	return scx_bpf_dsq_nr_queued(AKTS_DSQ_LC_VTIME) > 0;
}

/* The CPU a task's callbacks are about (not the caller's: a property change runs them from another CPU). */
static __always_inline struct preempt_cpu *preempt_cpu_of_task(struct task_struct *p)
{
	return preempt_cpu_of(scx_bpf_task_cpu(p));
}

/*
 * Claims `cpu` as the victim of a waking task of `p`'s if it may be one: its
 * current task is the BE run this policy saw begin there, its process is
 * still BE, and the CPU was not claimed less than `gap` ago (a claim from a
 * clock ahead of this one counts as recent). The compare-and-swap makes two
 * wakers racing for one CPU pick it once. True if claimed (the caller preempts it).
 */
static __always_inline bool preempt_claim(struct task_struct *p, s32 cpu, u64 gap)
{
	struct preempt_cpu *pc = preempt_cpu_of(cpu);
	struct task_struct *curr;
	u64 claimed, now;
	s32 pid;

	if (!pc || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) > 0)
		return false; /* a task will run there next anyway (a rescue on its way in among them) */
	pid = READ_ONCE(pc->pid);
	if (!pid || !READ_ONCE(pc->victim))
		return false;
	curr = __COMPAT_scx_bpf_cpu_curr(cpu);
	if (!curr || curr->pid != pid)
		return false; /* it stopped, a higher class runs, or the entry is from before a switch */
	if (akts_lookup_class(curr) == AKTS_CLASS_LC)
		return false; /* classified LC since its run began */
	claimed = READ_ONCE(pc->claimed_at);
	now = bpf_ktime_get_ns();
	if (claimed && (s64)(now - claimed) < (s64)gap)
		return false;
	return __sync_val_compare_and_swap(&pc->claimed_at, claimed, now) == claimed;
}

/* A waking LC task found no idle CPU: the CPU of a BE run it may take, claimed; -1 if none. */
static __always_inline s32 preempt_victim(struct task_struct *p)
{
	u64 gap = preempt_gap_ns;
	s32 prev = scx_bpf_task_cpu(p), cpu;
	u32 n = scx_bpf_nr_cpu_ids(), i;

	if (preempt_claim(p, prev, gap))
		return prev;
	bpf_for(i, 1, PREEMPT_SCAN + 1) {
		if (i >= n)
			break;
		cpu = ((u32)prev + i) % n;
		if (preempt_claim(p, cpu, gap))
			return cpu;
	}
	return -1;
}

/* p's run on its CPU begins or goes on: what a waker reads to decide whether to preempt it. */
static __always_inline void preempt_note_run(struct task_struct *p)
{
	struct preempt_cpu *pc = preempt_cpu_of_task(p);
	struct akts_task_ctx *tctx = akts_task_ctx(p);

	if (!pc)
		return;
	/* The frame marked a rescued run before this policy's callback (dispatcher: akts_mark_running first). */
	WRITE_ONCE(pc->victim, akts_task_class(p) != AKTS_CLASS_LC && !(tctx && (tctx->flags & AKTS_TASK_RESCUED)));
	WRITE_ONCE(pc->pid, p->pid);
}

/*
 * The slice of a run of p beginning (or going on) on this CPU: `slice` for
 * LC; for BE, `slice` too while LC waits, while this CPU's local DSQ holds a
 * task, or inside the gap after this CPU was preempted (a wake-up the gap
 * turns away waits for it), else be_slice.
 */
static __always_inline u64 preempt_slice_here(struct task_struct *p)
{
	struct preempt_cpu *pc;
	u64 claimed;

	if (akts_task_class(p) == AKTS_CLASS_LC || preempt_lc_waits())
		return lc_slice_ns;
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) > 0)
		return lc_slice_ns; /* a task handed to this CPU (a waking LC one among them) waits behind this run */
	pc = preempt_cpu_of_task(p);
	claimed = pc ? READ_ONCE(pc->claimed_at) : 0;
	if (claimed && (s64)(bpf_ktime_get_ns() - claimed) < (s64)preempt_gap_ns)
		return lc_slice_ns;
	return be_slice_ns;
}

/* The slice a waking task gets on an idle CPU, or in its queue. */
static __always_inline u64 preempt_slice(struct task_struct *p)
{
	return akts_task_class(p) == AKTS_CLASS_LC ? lc_slice_ns : be_slice_ns;
}

/*
 * A waking LC task may go straight to a victim's local DSQ, preempting its
 * run: nothing queued may go ahead of it (no LC task waits, no task another
 * policy left behind), and the kick is on. Then ops.enqueue is not called.
 */
static __always_inline bool preempt_may_hand_off(struct task_struct *p)
{
	return kick_on && akts_task_class(p) == AKTS_CLASS_LC && !preempt_lc_waits() &&
	       !akts_leftovers_queued(PREEMPT_OWN, akts_slot);
}

s32 BPF_STRUCT_OPS(preempt_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu, victim;

	akts_count_call(AKTS_CB_SELECT_CPU);
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, preempt_slice(p), 0);
		return cpu;
	}
	if (!(wake_flags & SCX_WAKE_TTWU) || !preempt_may_hand_off(p))
		return cpu;
	victim = preempt_victim(p);
	if (victim < 0)
		return cpu;
	/*
	 * The hand-off from here: the kernel puts the task on the victim's run
	 * queue and into its local DSQ, with no ops.enqueue (one callback and
	 * one idle scan less per preemption), and SCX_ENQ_PREEMPT ends the
	 * victim's run as it lands (akts.h's one exception to tail inserts).
	 */
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, lc_slice_ns, SCX_ENQ_PREEMPT);
	akts_fair_vtime(p, lc_slice_ns); /* its vtime as the LC queue would have had it */
	return victim;
}

void BPF_STRUCT_OPS(preempt_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 idle, victim;

	akts_count_call(AKTS_CB_ENQUEUE);
	if (akts_task_class(p) != AKTS_CLASS_LC) {
		/*
		 * A long slice, but a sleeper's vtime budget of `slice`, as every class's. A BE
		 * run cut for an LC task comes back here too, into the BE queue, not behind it
		 * in the local DSQ: there it would run before the LC task's next slice whenever
		 * that task runs out its own, which the serving path's CPU-bound decode does
		 * (docs/policies.md: the gpu node with and without that resume).
		 */
		scx_bpf_dsq_insert_vtime(p, AKTS_DSQ_BE_VTIME, be_slice_ns, akts_fair_vtime(p, lc_slice_ns), enq_flags);
		akts_kick_idle_cpu(p);
		return;
	}
	idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle < 0 && (enq_flags & SCX_ENQ_WAKEUP) && kick_on) {
		/* Here when ops.select_cpu was not called (one allowed CPU, migration disabled) or found no victim. */
		victim = preempt_victim(p);
		if (victim >= 0 && preempt_may_hand_off(p) && (victim == scx_bpf_task_cpu(p) || !p->migration_disabled)) {
			/*
			 * No LC task is ahead of it: straight to the victim's local DSQ, found
			 * empty at the claim, so the victim's next pick is this task with no
			 * ops.dispatch, and SCX_ENQ_PREEMPT ends the victim's run as it lands.
			 */
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | victim, lc_slice_ns, enq_flags | SCX_ENQ_PREEMPT);
			akts_fair_vtime(p, lc_slice_ns); /* its vtime as the LC queue would have had it */
			return;
		}
		akts_insert_vtime(p, AKTS_DSQ_LC_VTIME, lc_slice_ns, enq_flags);
		if (victim >= 0)
			scx_bpf_kick_cpu(victim, SCX_KICK_PREEMPT);
		return;
	}
	akts_insert_vtime(p, AKTS_DSQ_LC_VTIME, lc_slice_ns, enq_flags);
	if (idle >= 0)
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
}

void BPF_STRUCT_OPS(preempt_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	if (akts_prev_goes_on(prev, PREEMPT_OWN, akts_slot, true)) {
		/* The run goes on with no ops.stopping: charge it now, so the clock moves. */
		akts_charge_vtime(prev);
		akts_advance_vtime(prev);
		prev->scx.slice = preempt_slice_here(prev);
		preempt_note_run(prev); /* no ops.running for a run that goes on: its class or rescue may have changed */
		return;
	}
	/* What another policy left behind first, then LC before BE. */
	if (!akts_drain_leftovers(PREEMPT_OWN, akts_slot))
		akts_drain2(AKTS_DSQ_LC_VTIME, AKTS_DSQ_BE_VTIME);
}

AKTS_COUNT_ONLY(preempt, runnable)

void BPF_STRUCT_OPS(preempt_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, preempt_slice_here(p));
	akts_advance_vtime(p);
	preempt_note_run(p);
}

void BPF_STRUCT_OPS(preempt_stopping, struct task_struct *p, bool runnable)
{
	struct preempt_cpu *pc = preempt_cpu_of_task(p);

	akts_count_call(AKTS_CB_STOPPING);
	if (pc && READ_ONCE(pc->pid) == p->pid)
		WRITE_ONCE(pc->pid, 0);
	akts_charge_vtime(p);
}

AKTS_COUNT_ONLY(preempt, quiescent)

AKTS_POLICY_HOLDER(preempt, preempt);
