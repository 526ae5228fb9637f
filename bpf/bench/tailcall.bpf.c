/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The dispatch mechanism alone, for `akts bench tailcall`: the selector read
 * and bpf_tail_call that the dispatcher adds to every scheduling callback,
 * built as XDP programs so that BPF_PROG_TEST_RUN can time them natively with
 * a large repeat on any kernel with BPF (sched_ext programs cannot be test-run,
 * and the guest's TCG cannot time an indirect jump). Not a scheduler.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "akts.h"

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct akts_selector);
} bench_selector SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} bench_override SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, AKTS_MAX_SLOTS);
	__type(key, u32);
	__type(value, u32);
} bench_progs SEC(".maps");

/* The dispatcher's akts_effective_slot(): both words, each in its map. */
static __always_inline u32 bench_slot(void)
{
	u32 zero = 0;

	return akts_slot_from(bpf_map_lookup_elem(&bench_selector, &zero), bpf_map_lookup_elem(&bench_override, &zero));
}

/* What a policy in a slot returns. */
SEC("xdp")
int bench_policy(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* The dispatcher's path: read the selector, tail-call slot k. */
SEC("xdp")
int bench_with_tail_call(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &bench_progs, bench_slot());
	return XDP_DROP; /* fell through: empty slot or out of range */
}

/* The same selector read, no tail call: what a stand-alone policy pays. */
SEC("xdp")
int bench_without_tail_call(struct xdp_md *ctx)
{
	return bench_slot() < AKTS_MAX_SLOTS ? XDP_PASS : XDP_DROP;
}
