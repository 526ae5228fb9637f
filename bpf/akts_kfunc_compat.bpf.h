/* SPDX-License-Identifier: GPL-2.0 */
/*
 * <scx/common.bpf.h>, plus fallbacks for the kfuncs that some sched_ext
 * kernels cannot call: one object set that loads on every kernel it can.
 *
 * The kernel marks its sched_ext kfuncs KF_IMPLICIT_ARGS: the source says
 * scx_bpf_kick_cpu(cpu, flags, aux); the build's resolve_btfids drops the
 * trailing `struct bpf_prog_aux *` from the BTF prototype BPF sees and adds
 * scx_bpf_kick_cpu_impl with the full one, and the verifier calls the _impl
 * with the aux filled in. Several of the registry's kernels (7.2.6 to 7.2.12)
 * were built with that step missing for some kfuncs, a different subset each
 * time: there the kfunc's BTF still ends in `aux` and no _impl exists, so the
 * verifier refuses every call to it ("cannot find function X_impl in BTF"),
 * from any program, with any arguments (a declaration without the `aux`, as
 * here, is refused earlier by libbpf: "func_proto ... incompatible with
 * vmlinux"). vm/kfunc_compat.py lists them.
 *
 * libbpf leaves a __weak extern whose prototype differs from the kernel's
 * unresolved (a non-weak one fails the load). So a kfunc with a fallback is
 * declared __weak, and bpf_ksym_exists() chooses at load time; the verifier
 * discards the branch not taken as dead code, as for the kernel's own
 * compat.bpf.h. The fallbacks, and what they give up:
 *
 *   scx_bpf_select_cpu_dfl     __scx_bpf_select_cpu_and (the same kernel
 *                              search), else prev_cpu if it is idle, else
 *                              the first idle CPU the task may use
 *   scx_bpf_pick_idle_cpu      the first idle CPU in the mask from CPU 0 on,
 *                              claimed with scx_bpf_test_and_clear_cpu_idle:
 *                              no preference for a wholly idle core, and
 *                              flags such as SCX_PICK_IDLE_CORE ignored
 *   scx_bpf_test_and_clear_cpu_idle   false: no CPU is claimed as idle
 *   __COMPAT_scx_bpf_cpu_curr  scx_bpf_cpu_rq()->curr, else the curr of
 *                              the per-CPU runqueues (bpf_per_cpu_ptr)
 *   scx_bpf_dsq_insert_vtime   the older five-argument kfunc (compat.bpf.h
 *                              chose the packed one by its argument type
 *                              alone)
 *   scx_bpf_dump_bstr          nothing is added to the dump
 *
 * compat.bpf.h already falls back for scx_bpf_dsq_insert, scx_bpf_dsq_move_to_local,
 * scx_bpf_task_set_dsq_vtime and __COMPAT_scx_bpf_dsq_peek. The rest
 * (scx_bpf_create_dsq, scx_bpf_kick_cpu, scx_bpf_dsq_nr_queued,
 * scx_bpf_error_bstr, bpf_iter_scx_dsq_new) have no substitute and stay
 * required: a kernel that cannot call one of them cannot run akts, and
 * libbpf's load error names the kfunc.
 *
 * akts_common.bpf.h includes <scx/common.bpf.h> through this header. The
 * macros below wrap every later call, including those that the kernel's own
 * macros expand to; compat.bpf.h's inline wrappers were compiled before them,
 * so the ones akts calls that need it are replaced.
 */
#ifndef AKTS_KFUNC_COMPAT_BPF_H
#define AKTS_KFUNC_COMPAT_BPF_H

/*
 * The kernel trees' headers do not agree on which of these are __weak (7.2's
 * declares scx_bpf_cpu_rq without it; both declare scx_bpf_pick_idle_cpu so),
 * and clang keeps a symbol global even when a later redeclaration adds
 * __weak; so their declarations are renamed out of the way while
 * <scx/common.bpf.h> is included and every kfunc tested below is declared
 * here, weak. Nothing akts builds calls a renamed name (an inline wrapper of
 * compat.bpf.h that did, such as scx_bpf_select_cpu_and, would still resolve:
 * ___akts_unused is a flavour libbpf drops, so only the weakness is lost).
 */
#define scx_bpf_select_cpu_dfl scx_bpf_select_cpu_dfl___akts_unused
#define __scx_bpf_select_cpu_and __scx_bpf_select_cpu_and___akts_unused
#define scx_bpf_test_and_clear_cpu_idle scx_bpf_test_and_clear_cpu_idle___akts_unused
#define scx_bpf_pick_idle_cpu scx_bpf_pick_idle_cpu___akts_unused
#define scx_bpf_cpu_curr scx_bpf_cpu_curr___akts_unused
#define scx_bpf_cpu_rq scx_bpf_cpu_rq___akts_unused
#define __scx_bpf_dsq_insert_vtime __scx_bpf_dsq_insert_vtime___akts_unused
#define scx_bpf_dump_bstr scx_bpf_dump_bstr___akts_unused
#include <scx/common.bpf.h>
#undef scx_bpf_select_cpu_dfl
#undef __scx_bpf_select_cpu_and
#undef scx_bpf_test_and_clear_cpu_idle
#undef scx_bpf_pick_idle_cpu
#undef scx_bpf_cpu_curr
#undef scx_bpf_cpu_rq
#undef __scx_bpf_dsq_insert_vtime
#undef scx_bpf_dump_bstr

extern s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle) __ksym __weak;
extern s32 __scx_bpf_select_cpu_and(struct task_struct *p, const struct cpumask *cpus_allowed,
				    struct scx_bpf_select_cpu_and_args *args) __ksym __weak;
extern bool scx_bpf_test_and_clear_cpu_idle(s32 cpu) __ksym __weak;
extern s32 scx_bpf_pick_idle_cpu(const cpumask_t *cpus_allowed, u64 flags) __ksym __weak;
extern struct task_struct *scx_bpf_cpu_curr(s32 cpu) __ksym __weak;
extern struct rq *scx_bpf_cpu_rq(s32 cpu) __ksym __weak;
extern bool __scx_bpf_dsq_insert_vtime(struct task_struct *p, struct scx_bpf_dsq_insert_vtime_args *args) __ksym __weak;
extern void scx_bpf_dump_bstr(char *fmt, unsigned long long *data, u32 data_len) __ksym __weak;

static __always_inline bool akts_test_and_clear_cpu_idle(s32 cpu)
{
	if (bpf_ksym_exists(scx_bpf_test_and_clear_cpu_idle))
		return scx_bpf_test_and_clear_cpu_idle(cpu);
	return false;
}

/* The first CPU of @cpus that was idle, now claimed; -EBUSY if none. */
static __always_inline s32 akts_scan_idle_cpu(const cpumask_t *cpus)
{
	s32 cpu;

	bpf_for(cpu, 0, scx_bpf_nr_cpu_ids()) {
		if (bpf_cpumask_test_cpu(cpu, cpus) && akts_test_and_clear_cpu_idle(cpu))
			return cpu;
	}
	return -EBUSY;
}

static __always_inline s32 akts_pick_idle_cpu(const cpumask_t *cpus_allowed, u64 flags)
{
	if (bpf_ksym_exists(scx_bpf_pick_idle_cpu))
		return scx_bpf_pick_idle_cpu(cpus_allowed, flags);
	return akts_scan_idle_cpu(cpus_allowed);
}

static __always_inline s32 akts_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle)
{
	s32 cpu;

	if (bpf_ksym_exists(scx_bpf_select_cpu_dfl))
		return scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, is_idle);
	if (bpf_ksym_exists(__scx_bpf_select_cpu_and)) {
		struct scx_bpf_select_cpu_and_args args = {
			.prev_cpu = prev_cpu,
			.wake_flags = wake_flags,
			.flags = 0,
		};

		cpu = __scx_bpf_select_cpu_and(p, p->cpus_ptr, &args);
	} else if (bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) && akts_test_and_clear_cpu_idle(prev_cpu)) {
		cpu = prev_cpu;
	} else {
		cpu = akts_pick_idle_cpu(p->cpus_ptr, 0);
	}
	*is_idle = cpu >= 0;
	return cpu >= 0 ? cpu : prev_cpu;
}

#define scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, is_idle) akts_select_cpu_dfl(p, prev_cpu, wake_flags, is_idle)
#define scx_bpf_test_and_clear_cpu_idle(cpu) akts_test_and_clear_cpu_idle(cpu)
#define scx_bpf_pick_idle_cpu(cpus_allowed, flags) akts_pick_idle_cpu(cpus_allowed, flags)

static __always_inline struct task_struct *akts_cpu_curr(s32 cpu)
{
	struct rq *rq;

	if (bpf_ksym_exists(scx_bpf_cpu_curr))
		return scx_bpf_cpu_curr(cpu);
	if (bpf_ksym_exists(scx_bpf_cpu_rq)) {
		rq = scx_bpf_cpu_rq(cpu);
		return rq ? rq->curr : NULL;
	}
	/* common.bpf.h's typed ksym for the per-CPU run queues (every kernel has it) */
	rq = bpf_per_cpu_ptr(&runqueues, cpu);
	return rq ? rq->curr : NULL;
}
#define __COMPAT_scx_bpf_cpu_curr(cpu) akts_cpu_curr(cpu)

static __always_inline bool akts_dsq_insert_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime,
						  u64 enq_flags)
{
	/* The packed kfunc where the kernel has its argument type and can call it. */
	if (bpf_core_type_exists(struct scx_bpf_dsq_insert_vtime_args)) {
		if (bpf_ksym_exists(__scx_bpf_dsq_insert_vtime)) {
			struct scx_bpf_dsq_insert_vtime_args args = {
				.dsq_id = dsq_id,
				.slice = slice,
				.vtime = vtime,
				.enq_flags = enq_flags,
			};

			return __scx_bpf_dsq_insert_vtime(p, &args);
		}
	}
	if (bpf_ksym_exists(scx_bpf_dsq_insert_vtime___compat)) {
		scx_bpf_dsq_insert_vtime___compat(p, dsq_id, slice, vtime, enq_flags);
		return true;
	}
	scx_bpf_dispatch_vtime___compat(p, dsq_id, slice, vtime, enq_flags);
	return true;
}
#define scx_bpf_dsq_insert_vtime(p, dsq_id, slice, vtime, enq_flags) \
	akts_dsq_insert_vtime(p, dsq_id, slice, vtime, enq_flags)

#define scx_bpf_dump_bstr(fmt, data, data_len)                  \
	do {                                                    \
		if (bpf_ksym_exists(scx_bpf_dump_bstr))         \
			scx_bpf_dump_bstr(fmt, data, data_len); \
	} while (0)

#endif /* AKTS_KFUNC_COMPAT_BPF_H */
