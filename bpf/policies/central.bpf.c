/* SPDX-License-Identifier: GPL-2.0 */
/*
 * central - one CPU makes every scheduling decision (after the kernel's
 * scx_central).
 *
 * What it does: every waking task goes to the policy's own queues (LC
 * ahead of BE, each in arrival order); no other CPU takes from them. A CPU
 * whose slice ends with work waiting (or that has none) raises its hand (a
 * per-CPU flag) and kicks the central CPU (the live parameter
 * `central_cpu`); the central CPU's dispatch hands each CPU that asked the
 * first queued task that may run there, straight into that CPU's local
 * queue, and preempts what it runs (a run it asked to give up, which the
 * kernel lets go on meanwhile: no ENQ_LAST); then it picks for itself. A CPU
 * that finds work another way (a leftover of the previous policy, prev going
 * on, a kernel thread) lowers its hand. Per-CPU kernel threads skip the
 * queue and go to the tail of their own CPU's local queue, which is kicked
 * when one wakes (scx_central puts them at the head; the contract keeps the
 * head for the guard), so that ksoftirqd, which may carry the frame's
 * timers, waits behind what is queued there, not behind a whole slice. Slices are the live `slice`; the frame's
 * quantum timer (akts.h, Quantum timer), when on, ends them between ticks,
 * as scx_central's own timer does.
 *
 * Limits: every decision waits for the central CPU: a CPU that goes idle
 * stays idle until the central CPU runs its dispatch, so wake-up latency
 * includes a cross-CPU kick; and in partial mode, while the central CPU
 * runs fair or real-time work its dispatch does not run at all (kicks to a
 * higher class are not taken): tasks then wait for the guard's rescues
 * (max_wait), so pick a central_cpu that such work leaves alone. The central
 * CPU spends its time deciding, which on a machine of two CPUs is half the
 * machine. It pays off only with many CPUs: one decision point and global
 * FIFO order across CPUs, where the other CPUs only check their queues and
 * ask. A task that may not run on any CPU that asks waits until one of its
 * CPUs asks (the guard bounds the wait). A CPU whose hand is up while
 * nothing queued may run there keeps it up (and re-raises it at each end of
 * its slice): every wake-up meanwhile kicks the central CPU. A hand raised
 * before a switch away stays up until that CPU runs a task under central
 * again: it costs that CPU one preemption. No nice weights.
 *
 * When to pick it: many CPUs, short tasks that should start in global
 * arrival order, and a spare CPU to give the scheduler; never on two CPUs
 * except to measure its cost.
 */
#include "../akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

AKTS_PARAMS(AKTS_PARAM(0, "slice", AKTS_PARAM_DURATION, 20000000, 100000, 100000000, "ns",
		       "how long a task runs before the central CPU may give its CPU to another"),
	    AKTS_PARAM(1, "central_cpu", AKTS_PARAM_U64, 0, 0, 4095, "",
		       "the CPU that decides (an offline or absent one means CPU 0)"));
#define slice_ns akts_param(0)

#define CENTRAL_MAX_CPUS 4096

/* CPUs waiting for the central CPU to give them a task (the policy's own state). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CENTRAL_MAX_CPUS);
	__type(key, u32);
	__type(value, u32);
} central_gimme SEC(".maps");

/* How many CPUs have their hand up: the enqueue path kicks the central CPU only then. */
u32 central_waiting;

static __always_inline s32 central_cpu(void)
{
	u64 c = akts_param(1);
	const struct cpumask *online;
	bool up;

	if (c >= scx_bpf_nr_cpu_ids())
		return 0;
	online = scx_bpf_get_online_cpumask();
	up = bpf_cpumask_test_cpu(c, online);
	scx_bpf_put_cpumask(online);
	return up ? (s32)c : 0;
}

/* A hand goes up and down once, whoever races (the CPU itself, the central CPU): the count stays true. */
static __always_inline void central_raise_hand(s32 cpu)
{
	u32 key = cpu;
	u32 *gimme = bpf_map_lookup_elem(&central_gimme, &key);

	if (gimme && __sync_val_compare_and_swap(gimme, 0, 1) == 0)
		__sync_fetch_and_add(&central_waiting, 1);
}

static __always_inline void central_lower_hand(s32 cpu)
{
	u32 key = cpu;
	u32 *gimme = bpf_map_lookup_elem(&central_gimme, &key);

	if (gimme && __sync_val_compare_and_swap(gimme, 1, 0) == 1)
		__sync_fetch_and_sub(&central_waiting, 1);
}

s32 BPF_STRUCT_OPS(central_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	/* No decision here: every task goes through ops.enqueue to the central queue. */
	return prev_cpu;
}

void BPF_STRUCT_OPS(central_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 me;

	akts_count_call(AKTS_CB_ENQUEUE);
	if ((p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1) {
		/*
		 * At the tail of its CPU's local queue (never the head); a waking
		 * one ends the current slice there (a busy one that used its slice
		 * up takes its turn behind what is queued).
		 */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags & ~SCX_ENQ_HEAD);
		if (enq_flags & SCX_ENQ_WAKEUP)
			scx_bpf_kick_cpu(scx_bpf_task_cpu(p), SCX_KICK_PREEMPT);
		return;
	}
	akts_insert_own(p, akts_task_class(p) == AKTS_CLASS_LC ? 0 : 1, slice_ns, enq_flags);
	/*
	 * Someone waits for work: the central CPU decides now. An idle central
	 * CPU wakes either way. Not for the central CPU's own prev going back
	 * (not a wake-up): it is deciding right now, and a kick would only cut
	 * the run it is about to start.
	 */
	me = central_cpu();
	if (!(enq_flags & SCX_ENQ_WAKEUP) && bpf_get_smp_processor_id() == me)
		return;
	if (READ_ONCE(central_waiting))
		scx_bpf_kick_cpu(me, SCX_KICK_PREEMPT);
	else
		scx_bpf_kick_cpu(me, SCX_KICK_IDLE);
}

/* Moves the first task of `dsq` that may run on `cpu` to that CPU's local queue; true if one moved. */
static __always_inline bool central_give(u64 dsq, s32 cpu)
{
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		if (p->migration_disabled && scx_bpf_task_cpu(p) != cpu)
			continue;
		scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, slice_ns);
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL_ON | cpu, 0))
			return true;
	}
	return false;
}

void BPF_STRUCT_OPS(central_dispatch, s32 cpu, struct task_struct *prev)
{
	s32 me = central_cpu();
	u32 c, nr = scx_bpf_nr_cpu_ids();

	akts_count_call(AKTS_CB_DISPATCH);
	if (cpu != me) {
		/* The hand-off first: what a switch left runs before anything is asked for. */
		if (akts_drain_leftovers(0, akts_slot)) {
			central_lower_hand(cpu);
			return;
		}
		if (akts_prev_goes_on(prev, 0, akts_slot, false)) {
			prev->scx.slice = slice_ns; /* nothing waits anywhere: it goes on */
			central_lower_hand(cpu);
			return;
		}
		/*
		 * No ENQ_LAST (akts.h): with nothing local, the kernel lets prev
		 * run on. The central CPU preempts it when it hands this CPU a
		 * task (the kick after central_give).
		 */
		central_raise_hand(cpu);
		scx_bpf_kick_cpu(me, SCX_KICK_PREEMPT);
		return;
	}
	/* The central CPU: every CPU that asked gets the first task that may run there. */
	if (nr > CENTRAL_MAX_CPUS)
		nr = CENTRAL_MAX_CPUS;
	bpf_for(c, 0, nr) {
		u32 key = c;
		u32 *gimme;

		if ((s32)c == me)
			continue;
		gimme = bpf_map_lookup_elem(&central_gimme, &key);
		if (!gimme || !*gimme)
			continue;
		/* It asked: whatever it runs now is a run this policy did not give it, so it yields at once. */
		if (central_give(akts_own_fifo(0), c) || central_give(akts_own_fifo(1), c)) {
			central_lower_hand(c);
			scx_bpf_kick_cpu(c, SCX_KICK_PREEMPT);
		}
	}
	/* Then itself. */
	if (akts_drain_leftovers(0, akts_slot))
		return;
	if (akts_prev_goes_on(prev, 0, akts_slot, false)) {
		prev->scx.slice = slice_ns;
		return;
	}
	if (!central_give(akts_own_fifo(0), me))
		central_give(akts_own_fifo(1), me);
}

AKTS_COUNT_ONLY(central, runnable)

void BPF_STRUCT_OPS(central_running, struct task_struct *p)
{
	akts_count_call(AKTS_CB_RUNNING);
	akts_cap_slice(p, slice_ns);
	/* Its CPU found work (a leftover, a kernel thread, prev): it no longer asks. */
	central_lower_hand(scx_bpf_task_cpu(p));
}

AKTS_COUNT_ONLY(central, stopping)
AKTS_COUNT_ONLY(central, quiescent)

AKTS_POLICY_HOLDER(central, central);
