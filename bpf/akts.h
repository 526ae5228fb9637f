/* SPDX-License-Identifier: GPL-2.0 */
/*
 * akts.h - the one contract between the kernel side (bpf/) and the user side
 * (src/). Both include this file; nothing here is duplicated elsewhere.
 *
 * Dispatch
 *   Each scheduling callback listed in enum akts_callback has its own
 *   BPF_MAP_TYPE_PROG_ARRAY of AKTS_MAX_SLOTS entries (akts_<callback>_progs).
 *   The dispatcher computes the effective slot k (see Selector) and tail-calls
 *   slot k of that callback's array. A policy occupies the same slot in every
 *   array; it must fill all of them, or the callbacks it lacks fall through.
 *   The kernel refuses a program of one sched_ext_ops member in another
 *   member's array, so the arrays cannot be mixed up.
 *
 * Fall-through
 *   An empty slot, k >= AKTS_MAX_SLOTS, and AKTS_SLOT_NONE make the tail call
 *   return; the dispatcher then runs its built-in safe default (idle-CPU pick,
 *   FIFO) and counts a fall-through. Nothing else: a wrong k is inert.
 *
 * Selector
 *   struct akts_selector, entry 0 of the akts_selector array map, which is
 *   BPF_F_MMAPABLE: the user side switches with one 32-bit store through the
 *   mapping (or with bpf_map_update_elem). Two words:
 *     selected  the slot the user side picked;
 *     override  written by BPF itself (a circuit breaker): when bit 31
 *               (AKTS_OVERRIDE_ACTIVE) is set, the low 31 bits are the slot
 *               that runs, whatever selected says. A forced default is
 *               AKTS_OVERRIDE_ACTIVE | AKTS_OVERRIDE_SLOT_MASK.
 *   effective slot = override active ? override slot : selected.
 *
 * Hand-off
 *   The dispatcher creates every shared DSQ in enum akts_dsq at init. A DSQ is
 *   either FIFO or vtime-ordered, never both. Every policy's dispatch, and the
 *   default's, drains every one of them (each in its own order), so a switch
 *   never strands a queued task.
 *
 * Classes
 *   akts_classes maps a process (tgid) to enum akts_class; threads share their
 *   process's entry. An unlisted task is best-effort.
 *
 * Lifecycle callbacks (init, exit, init_task, exit_task, enable, disable,
 * cpu_online/offline, set_weight, set_cpumask, dump) stay in the dispatcher.
 */
#ifndef AKTS_H
#define AKTS_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define AKTS_MAX_SLOTS 8u
#define AKTS_SLOT_NONE 0xffffffffu
#define AKTS_OVERRIDE_ACTIVE 0x80000000u
#define AKTS_OVERRIDE_SLOT_MASK 0x7fffffffu
#define AKTS_OVERRIDE_OFF 0u

/* Scheduling callbacks that tail-call into a policy. */
enum akts_callback {
	AKTS_CB_SELECT_CPU = 0,
	AKTS_CB_ENQUEUE = 1,
	AKTS_CB_DISPATCH = 2,
	AKTS_CB_RUNNABLE = 3,
	AKTS_CB_RUNNING = 4,
	AKTS_CB_STOPPING = 5,
	AKTS_CB_QUIESCENT = 6,
	AKTS_NR_CALLBACKS = 7,
};

enum akts_class {
	AKTS_CLASS_BE = 0, /* best-effort: batch work, the default */
	AKTS_CLASS_LC = 1, /* latency-critical */
	AKTS_NR_CLASSES = 2,
};

/* Shared DSQs, created once by the dispatcher (ids clear of built-in ones). */
enum akts_dsq {
	AKTS_DSQ_LC_FIFO = 0x100,
	AKTS_DSQ_BE_FIFO = 0x101,
	AKTS_DSQ_LC_VTIME = 0x102,
	AKTS_DSQ_BE_VTIME = 0x103,
	AKTS_DSQ_FIRST = AKTS_DSQ_LC_FIFO,
	AKTS_NR_DSQS = 4,
};

struct akts_selector {
	__u32 selected;
	__u32 override;
};

/* Wait histogram: bucket b counts waits in [2^b, 2^(b+1)) ns; the last one
 * everything above. 2^31 ns is about 2.1 s. */
#define AKTS_WAIT_BUCKETS 32u

/* Per-CPU counters (akts_stats, a one-entry per-CPU array). */
struct akts_cpu_stats {
	__u64 entries[AKTS_NR_CALLBACKS];		   /* dispatcher invocations */
	__u64 calls[AKTS_NR_CALLBACKS][AKTS_MAX_SLOTS];	   /* reached the policy in slot */
	__u64 fallthrough[AKTS_NR_CALLBACKS];		   /* ran the built-in default */
	__u64 wait_hist[AKTS_NR_CLASSES][AKTS_WAIT_BUCKETS]; /* enqueue-to-running, ns */
	/* Switch-to-effect: the effective slot this CPU's last callback saw and
	 * when that changed (bpf_ktime_get_ns, i.e. CLOCK_MONOTONIC). Not summed. */
	__u32 last_slot;
	__u32 pad;
	__u64 slot_seen_ns;
};

/* Argument of the akts_switch syscall program (BPF_PROG_TEST_RUN ctx_in). */
struct akts_switch_args {
	__u32 slot;
	__u32 kick; /* non-zero: preempt every CPU so the new policy applies at once */
};

/* Per-task state (task storage), understood by every policy. */
struct akts_task_ctx {
	__u64 ready_at;	  /* when the task became runnable; 0 once it ran */
	__u64 running_at; /* when it last started running */
	__u32 cls;	  /* enum akts_class, refreshed when it becomes runnable */
	__u32 pad;
};

/* State every policy shares (akts_shared, a one-entry array). */
struct akts_shared {
	__u64 vtime_now; /* global virtual clock of the vtime DSQs */
};

#ifdef __cplusplus
static_assert(sizeof(struct akts_selector) == 8, "selector layout");
static_assert(sizeof(struct akts_cpu_stats) == 8 * (7 + 56 + 7 + 64 + 2), "stats layout");
static_assert(sizeof(struct akts_switch_args) == 8, "switch args layout");
static_assert(sizeof(struct akts_task_ctx) == 24, "task ctx layout");
#else
_Static_assert(sizeof(struct akts_selector) == 8, "selector layout");
_Static_assert(sizeof(struct akts_cpu_stats) == 8 * (7 + 56 + 7 + 64 + 2), "stats layout");
_Static_assert(sizeof(struct akts_switch_args) == 8, "switch args layout");
_Static_assert(sizeof(struct akts_task_ctx) == 24, "task ctx layout");
#endif

#endif /* AKTS_H */
