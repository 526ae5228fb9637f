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
	u64 now = bpf_ktime_get_ns();

	if (!tctx)
		return;
	tctx->running_at = now;
	if (!tctx->ready_at)
		return;
#ifndef AKTS_NO_COUNTERS
	struct akts_cpu_stats *st = akts_cpu_stats();
	u32 b, cls;

	if (st) {
		b = akts_log2(now > tctx->ready_at ? now - tctx->ready_at : 0);
		if (b >= AKTS_WAIT_BUCKETS)
			b = AKTS_WAIT_BUCKETS - 1;
		cls = tctx->cls == AKTS_CLASS_LC ? AKTS_CLASS_LC : AKTS_CLASS_BE;
		st->wait_hist[cls][b]++;
	}
#endif
	tctx->ready_at = 0;
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
		u32 tgid = p->tgid, ptgid = BPF_CORE_READ(p, real_parent, tgid);
		u32 *pcls = bpf_map_lookup_elem(&akts_classes, &ptgid);

		if (pcls && !bpf_map_lookup_elem(&akts_classes, &tgid))
			bpf_map_update_elem(&akts_classes, &tgid, pcls, BPF_NOEXIST);
	}
	tctx->cls = akts_lookup_class(p);
	return 0;
}

/* A process's class goes with it. */
static __always_inline void akts_frame_exit_task(struct task_struct *p)
{
	u32 tgid = p->tgid;

	if (p->pid == p->tgid)
		bpf_map_delete_elem(&akts_classes, &tgid);
}

static __always_inline void akts_frame_enable(struct task_struct *p)
{
	struct akts_shared *sh = akts_shared_state();

	scx_bpf_task_set_dsq_vtime(p, sh ? sh->vtime_now : 0);
}

/* Every shared DSQ exists before any policy runs (init is sleepable). */
static __always_inline s32 akts_frame_init(void)
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

#endif /* AKTS_FRAME_BPF_H */
