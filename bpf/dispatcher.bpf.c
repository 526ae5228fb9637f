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
 * Lifecycle callbacks never dispatch: init creates every shared DSQ up front
 * (it is sleepable, and a policy must be able to assume its queues exist),
 * init_task creates the per-task state, exit records why the scheduler ended.
 *
 * See akts.h for the contracts (slots, selector, hand-off, classes).
 */
#include "akts_common.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* Slice of the built-in default (and of tasks a policy leaves unsliced). */
const volatile u64 default_slice_ns = 5000000; /* 5 ms */

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
	u32 zero = 0, ovr;
	struct akts_selector *sel = bpf_map_lookup_elem(&akts_selector, &zero);

	if (!sel)
		return AKTS_SLOT_NONE;
	ovr = READ_ONCE(sel->override);
	if (ovr & AKTS_OVERRIDE_ACTIVE)
		return ovr & AKTS_OVERRIDE_SLOT_MASK;
	return READ_ONCE(sel->selected);
}

static __always_inline void akts_count_entry(enum akts_callback cb)
{
	struct akts_cpu_stats *st = akts_cpu_stats();

	if (st)
		st->entries[cb]++;
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

/* Stamps the moment a task became ready to run (kept if already stamped). */
static __always_inline void akts_mark_ready(struct task_struct *p, bool refresh_class)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);

	if (!tctx)
		return;
	if (refresh_class)
		tctx->cls = akts_lookup_class(p);
	if (!tctx->ready_at)
		tctx->ready_at = bpf_ktime_get_ns();
}

/* Records how long the task waited, per class, and when it started running. */
static __always_inline void akts_mark_running(struct task_struct *p)
{
	struct akts_task_ctx *tctx = akts_task_ctx(p);
	struct akts_cpu_stats *st;
	u64 now = bpf_ktime_get_ns();
	u32 b, cls;

	if (!tctx)
		return;
	tctx->running_at = now;
	if (!tctx->ready_at)
		return;
	st = akts_cpu_stats();
	if (st) {
		b = akts_log2(now > tctx->ready_at ? now - tctx->ready_at : 0);
		if (b >= AKTS_WAIT_BUCKETS)
			b = AKTS_WAIT_BUCKETS - 1;
		cls = tctx->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
		st->wait_hist[cls][b]++;
	}
	tctx->ready_at = 0;
}

/*
 * The built-in default: what runs when the effective slot names no policy.
 * Idle-CPU pick with direct dispatch, then per-class FIFO queues.
 */
s32 BPF_STRUCT_OPS(akts_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	akts_count_entry(AKTS_CB_SELECT_CPU);
	bpf_tail_call(ctx, &akts_select_cpu_progs, akts_effective_slot());
	akts_count_fallthrough(AKTS_CB_SELECT_CPU);

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, default_slice_ns, 0);
	return cpu;
}

void BPF_STRUCT_OPS(akts_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_entry(AKTS_CB_ENQUEUE);
	akts_mark_ready(p, false);
	bpf_tail_call(ctx, &akts_enqueue_progs, akts_effective_slot());
	akts_count_fallthrough(AKTS_CB_ENQUEUE);

	if (akts_task_class(p) == AKTS_CLASS_LC)
		scx_bpf_dsq_insert(p, AKTS_DSQ_LC_FIFO, default_slice_ns, enq_flags);
	else
		scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, default_slice_ns, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(akts_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_entry(AKTS_CB_DISPATCH);
	bpf_tail_call(ctx, &akts_dispatch_progs, akts_effective_slot());
	akts_count_fallthrough(AKTS_CB_DISPATCH);

	akts_drain(AKTS_DSQ_LC_FIFO, AKTS_DSQ_LC_VTIME, AKTS_DSQ_BE_FIFO, AKTS_DSQ_BE_VTIME);
}

void BPF_STRUCT_OPS(akts_runnable, struct task_struct *p, u64 enq_flags)
{
	akts_count_entry(AKTS_CB_RUNNABLE);
	akts_mark_ready(p, true);
	bpf_tail_call(ctx, &akts_runnable_progs, akts_effective_slot());
	akts_count_fallthrough(AKTS_CB_RUNNABLE);
}

void BPF_STRUCT_OPS(akts_running, struct task_struct *p)
{
	akts_count_entry(AKTS_CB_RUNNING);
	akts_mark_running(p);
	bpf_tail_call(ctx, &akts_running_progs, akts_effective_slot());
	akts_count_fallthrough(AKTS_CB_RUNNING);
}

void BPF_STRUCT_OPS(akts_stopping, struct task_struct *p, bool runnable)
{
	akts_count_entry(AKTS_CB_STOPPING);
	bpf_tail_call(ctx, &akts_stopping_progs, akts_effective_slot());
	akts_count_fallthrough(AKTS_CB_STOPPING);
}

void BPF_STRUCT_OPS(akts_quiescent, struct task_struct *p, u64 deq_flags)
{
	akts_count_entry(AKTS_CB_QUIESCENT);
	bpf_tail_call(ctx, &akts_quiescent_progs, akts_effective_slot());
	akts_count_fallthrough(AKTS_CB_QUIESCENT);
}

s32 BPF_STRUCT_OPS(akts_init_task, struct task_struct *p, struct scx_init_task_args *args)
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
		u32 tgid = p->tgid, ptgid = BPF_CORE_READ(p, real_parent, tgid);
		u32 *pcls = bpf_map_lookup_elem(&akts_classes, &ptgid);

		if (pcls && !bpf_map_lookup_elem(&akts_classes, &tgid))
			bpf_map_update_elem(&akts_classes, &tgid, pcls, BPF_NOEXIST);
	}
	tctx->cls = akts_lookup_class(p);
	return 0;
}

/* A process's class goes with it. */
void BPF_STRUCT_OPS(akts_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	u32 tgid = p->tgid;

	if (p->pid == p->tgid)
		bpf_map_delete_elem(&akts_classes, &tgid);
}

void BPF_STRUCT_OPS(akts_enable, struct task_struct *p)
{
	struct akts_shared *sh = akts_shared_state();

	scx_bpf_task_set_dsq_vtime(p, sh ? sh->vtime_now : 0);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(akts_init)
{
	s32 ret;
	u32 i;

	for (i = 0; i < AKTS_NR_DSQS; i++) {
		ret = scx_bpf_create_dsq(AKTS_DSQ_FIRST + i, -1);
		if (ret) {
			scx_bpf_error("akts: cannot create DSQ %u (%d)", AKTS_DSQ_FIRST + i, ret);
			return ret;
		}
	}
	return 0;
}

void BPF_STRUCT_OPS(akts_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

/*
 * How many tasks wait in akts's shared DSQs and the CPUs' local DSQs, for the
 * user side (run with BPF_PROG_TEST_RUN; the answer lands in queued_total).
 * Not associated with the scheduler's map, so the kernel resolves it to the
 * root scheduler: akts itself while it is attached.
 */
u64 queued_total;

SEC("syscall")
int akts_count_queued(void *ctx)
{
	u32 i, cpu, nr_cpus = scx_bpf_nr_cpu_ids();
	u64 total = 0;
	s32 n;

	for (i = 0; i < AKTS_NR_DSQS; i++) {
		n = scx_bpf_dsq_nr_queued(AKTS_DSQ_FIRST + i);
		if (n > 0)
			total += n;
	}
	for (cpu = 0; cpu < 256 && cpu < nr_cpus; cpu++) {
		n = scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu);
		if (n > 0)
			total += n;
	}
	queued_total = total;
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
	       .init = (void *)akts_init,
	       .exit = (void *)akts_exit,
	       .flags = SCX_OPS_SWITCH_PARTIAL,
	       .name = "akts");
