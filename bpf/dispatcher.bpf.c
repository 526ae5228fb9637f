/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The akts dispatcher: the sched_ext scheduler that is actually registered.
 *
 * On each scheduling callback it does the work every policy needs (counters,
 * the wait-time stamps), reads the effective slot k from the selector and
 * tail-calls slot k of that callback's prog array. If the slot is empty or k
 * is out of range the tail call returns and the built-in default runs: the
 * kernel's idle-CPU pick and FIFO queues. Nothing runs after a successful tail
 * call, so whatever must always happen happens before it.
 *
 * Lifecycle callbacks never dispatch: init creates and registers every shared
 * DSQ and every slot's private queues up front (it is sleepable, and a policy
 * must be able to assume its queues exist) and starts the bounded-wait guard's timer, init_task creates
 * the per-task state, disable forgets a departing task's wait, exit records
 * why the scheduler ended.
 *
 * See akts.h for the contracts (slots, selector, hand-off, classes).
 */
#include "akts_frame.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* Slice the built-in default gives. */
const volatile u64 default_slice_ns = 5000000; /* 5 ms */

/* The shared DSQs the built-in default inserts into (the hand-off, akts.h). */
#define AKTS_DEFAULT_OWN (AKTS_OWN(AKTS_DSQ_LC_FIFO) | AKTS_OWN(AKTS_DSQ_BE_FIFO))

#define AKTS_PROG_ARRAY(cb)                                \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_PROG_ARRAY);     \
		__uint(max_entries, AKTS_MAX_SLOTS);       \
		__type(key, u32);                          \
		__type(value, u32);                        \
	} akts_##cb##_progs SEC(".maps")

AKTS_PROG_ARRAY(select_cpu);
AKTS_PROG_ARRAY(enqueue);
AKTS_PROG_ARRAY(dispatch);
AKTS_PROG_ARRAY(runnable);
AKTS_PROG_ARRAY(running);
AKTS_PROG_ARRAY(stopping);
AKTS_PROG_ARRAY(quiescent);

static __always_inline u32 akts_effective_slot(void)
{
	u32 zero = 0;

	return akts_slot_from(bpf_map_lookup_elem(&akts_selector, &zero), bpf_map_lookup_elem(&akts_override, &zero));
}

/*
 * The built-in default: what runs when the effective slot names no policy.
 * Idle-CPU pick with direct dispatch, then per-class FIFO queues.
 */
s32 BPF_STRUCT_OPS(akts_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	u32 k = akts_effective_slot();
	bool is_idle = false;
	s32 cpu;

	akts_count_entry(AKTS_CB_SELECT_CPU, k);
	bpf_tail_call(ctx, &akts_select_cpu_progs, k);
	akts_count_fallthrough(AKTS_CB_SELECT_CPU);

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, default_slice_ns, 0);
	return cpu;
}

void BPF_STRUCT_OPS(akts_enqueue, struct task_struct *p, u64 enq_flags)
{
	u32 k = akts_effective_slot();

	akts_count_entry(AKTS_CB_ENQUEUE, k);
	akts_mark_ready(p);
	bpf_tail_call(ctx, &akts_enqueue_progs, k);
	akts_count_fallthrough(AKTS_CB_ENQUEUE);

	if (akts_task_class(p) == AKTS_CLASS_LC)
		scx_bpf_dsq_insert(p, AKTS_DSQ_LC_FIFO, default_slice_ns, enq_flags);
	else
		scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, default_slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(akts_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 k = akts_effective_slot();

	/* A rescued run cut short goes on, the policy unasked (not counted: no policy's call). */
	if (akts_frame_dispatch(prev))
		return;
	akts_count_entry(AKTS_CB_DISPATCH, k);
	bpf_tail_call(ctx, &akts_dispatch_progs, k);
	akts_count_fallthrough(AKTS_CB_DISPATCH);

	/* What a policy left behind first, then LC before BE. */
	if (!akts_drain_leftovers(AKTS_DEFAULT_OWN, AKTS_SLOT_NONE))
		akts_drain2(AKTS_DSQ_LC_FIFO, AKTS_DSQ_BE_FIFO);
}

void BPF_STRUCT_OPS(akts_runnable, struct task_struct *p, u64 enq_flags)
{
	u32 k = akts_effective_slot();

	akts_count_entry(AKTS_CB_RUNNABLE, k);
	akts_mark_ready(p);
	bpf_tail_call(ctx, &akts_runnable_progs, k);
	akts_count_fallthrough(AKTS_CB_RUNNABLE);
}

void BPF_STRUCT_OPS(akts_running, struct task_struct *p)
{
	u32 k = akts_effective_slot();

	akts_count_entry(AKTS_CB_RUNNING, k);
	akts_mark_running(p);
	bpf_tail_call(ctx, &akts_running_progs, k);
	akts_count_fallthrough(AKTS_CB_RUNNING);
}

void BPF_STRUCT_OPS(akts_stopping, struct task_struct *p, bool runnable)
{
	u32 k = akts_effective_slot();

	akts_count_entry(AKTS_CB_STOPPING, k);
	akts_mark_stopping(p, runnable);
	bpf_tail_call(ctx, &akts_stopping_progs, k);
	akts_count_fallthrough(AKTS_CB_STOPPING);
}

void BPF_STRUCT_OPS(akts_quiescent, struct task_struct *p, u64 deq_flags)
{
	u32 k = akts_effective_slot();

	akts_count_entry(AKTS_CB_QUIESCENT, k);
	akts_mark_quiescent(p, deq_flags);
	bpf_tail_call(ctx, &akts_quiescent_progs, k);
	akts_count_fallthrough(AKTS_CB_QUIESCENT);
}

s32 BPF_STRUCT_OPS(akts_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	return akts_frame_init_task(p, args);
}

void BPF_STRUCT_OPS(akts_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	akts_frame_exit_task(p, args);
}

void BPF_STRUCT_OPS(akts_enable, struct task_struct *p)
{
	akts_frame_enable(p);
}

void BPF_STRUCT_OPS(akts_tick, struct task_struct *p)
{
	akts_frame_tick(p);
}

void BPF_STRUCT_OPS(akts_disable, struct task_struct *p)
{
	akts_frame_disable(p);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(akts_init)
{
	return akts_frame_init();
}

/* Into the kernel's debug dump when the scheduler is ejected: what was selected. */
void BPF_STRUCT_OPS(akts_dump, struct scx_dump_ctx *dctx)
{
	u32 zero = 0;
	struct akts_selector *sel = bpf_map_lookup_elem(&akts_selector, &zero);

	u32 *ovr = bpf_map_lookup_elem(&akts_override, &zero);

	if (sel && ovr)
		scx_bpf_dump("akts: selected slot %u, override 0x%x", sel->selected, *ovr);
}

void BPF_STRUCT_OPS(akts_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

/*
 * How many tasks wait in akts's registered DSQs and the CPUs' local DSQs, for the
 * user side (run with BPF_PROG_TEST_RUN; the answer lands in queued_total).
 * Not associated with the scheduler's map, so the kernel resolves it to the
 * root scheduler: akts itself while it is attached.
 */
u64 queued_total;

SEC("syscall")
int akts_count_queued(void *ctx)
{
	u64 total = 0, dsq;
	u32 i, flags, owner;
	int *cpu;
	s32 n;

	for (i = 0; i < AKTS_NR_REGISTERED; i++) {
		akts_queue_entry(i, &dsq, &flags, &owner);
		n = scx_bpf_dsq_nr_queued(dsq);
		if (n > 0)
			total += n;
	}
	for_each_possible_cpu(cpu) {
		n = scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | *cpu);
		if (n > 0)
			total += n;
	}
	queued_total = total;
	return 0;
}

/*
 * How many tasks wait in one slot's private queues (the answer lands in
 * slot_queued_total; -1 for a slot out of range). The loader fills a slot at
 * run time only once they are empty, so a policy never meets the keys of the
 * one that was there before (akts.h, Queues). Run with BPF_PROG_TEST_RUN,
 * ctx_in = struct akts_slot_args.
 */
s64 slot_queued_total;

SEC("syscall")
int akts_slot_queued(struct akts_slot_args *args)
{
	s64 total = 0;
	s32 n;
	u32 q;

	if (args->slot >= AKTS_MAX_SLOTS) {
		slot_queued_total = -1;
		return -EINVAL;
	}
	for (q = 0; q < AKTS_PRIVATE_QUEUES; q++) {
		n = scx_bpf_dsq_nr_queued(AKTS_DSQ_PRIVATE(args->slot, q));
		if (n > 0)
			total += n;
	}
	slot_queued_total = total;
	return 0;
}

/*
 * The kicking switch: stores the new slot and preempts every CPU, so each one
 * runs its next callback (and so the new policy) at once instead of when its
 * current slice ends. Run with BPF_PROG_TEST_RUN, ctx_in = struct akts_switch_args.
 */
SEC("syscall")
int akts_switch(struct akts_switch_args *args)
{
	struct akts_selector *sel;
	u32 zero = 0;
	int *cpu;

	sel = bpf_map_lookup_elem(&akts_selector, &zero);
	if (!sel)
		return -ENOENT;
	WRITE_ONCE(sel->selected, args->slot);
	if (args->kick)
		for_each_possible_cpu(cpu)
			scx_bpf_kick_cpu(*cpu, SCX_KICK_PREEMPT);
	return 0;
}

/*
 * Writes the override word, the only way the user side can (for tests; the
 * circuit breaker writes it from the guard's timer). Run with
 * BPF_PROG_TEST_RUN, ctx_in = struct akts_override_args.
 */
SEC("syscall")
int akts_set_override(struct akts_override_args *args)
{
	struct akts_breaker_state *bs;
	u32 zero = 0, *ovr;
	int *cpu;

	ovr = bpf_map_lookup_elem(&akts_override, &zero);
	bs = bpf_map_lookup_elem(&akts_breaker_state, &zero);
	if (!ovr || !bs)
		return -ENOENT;
	/* A trip owns the word until it ends (akts.h, "Circuit breaker"). */
	if (READ_ONCE(bs->tripped_at_ns))
		return -EBUSY;
	WRITE_ONCE(*ovr, args->word);
	if (args->kick)
		for_each_possible_cpu(cpu)
			scx_bpf_kick_cpu(*cpu, SCX_KICK_PREEMPT);
	return 0;
}

SCX_OPS_DEFINE(akts_ops,
	       .select_cpu = (void *)akts_select_cpu,
	       .enqueue = (void *)akts_enqueue,
	       .dispatch = (void *)akts_dispatch,
	       .runnable = (void *)akts_runnable,
	       .running = (void *)akts_running,
	       .stopping = (void *)akts_stopping,
	       .quiescent = (void *)akts_quiescent,
	       .init_task = (void *)akts_init_task,
	       .exit_task = (void *)akts_exit_task,
	       .enable = (void *)akts_enable,
	       .disable = (void *)akts_disable,
	       .tick = (void *)akts_tick,
	       .init = (void *)akts_init,
	       .dump = (void *)akts_dump,
	       .exit = (void *)akts_exit,
	       .flags = SCX_OPS_SWITCH_PARTIAL,
	       .name = "akts");
