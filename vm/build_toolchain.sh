#!/usr/bin/env bash
# Builds a matched libbpf + bpftool from the pinned kernel's own source tree
# (the pair its tools/sched_ext builds with) into $AKTS_CACHE/toolchain:
#   toolchain/include/bpf/*.h, toolchain/lib/libbpf.a, toolchain/bin/bpftool
# and the kernel's peer schedulers (scx_simple, ...) into toolchain/scx/bin (vm/build_peers.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"

SRC="$AKTS_CACHE/kernel/src"
OUT="$AKTS_CACHE/toolchain"
[[ -d "$SRC/tools/lib/bpf" ]] || akts_die "kernel source missing: run vm/fetch_kernel.sh first"
stamp="$OUT/stamp-$(cat "$AKTS_CACHE/kernel/release")"
jobs=$(nproc)
# The peers (their own script and stamp: a peer that failed is tried again, a finished set is not rebuilt);
# AKTS_NO_PEERS=1 (the demo's set-up, which runs none) leaves them to the next set-up that wants them.
build_peers() {
	[[ ${AKTS_NO_PEERS:-0} == 1 ]] && return 0
	bash "$AKTS_ROOT/vm/build_peers.sh" "$AKTS_CACHE/kernel" "$OUT/scx"
}
if [[ -f "$stamp" ]]; then
	build_peers
	exit 0
fi

rm -rf "$OUT" && mkdir -p "$OUT/obj/libbpf" "$OUT/obj/bpftool" "$OUT/bin"

akts_log "building libbpf from the kernel source"
make -s -C "$SRC/tools/lib/bpf" -j"$jobs" BUILD_STATIC_ONLY=1 OBJDIR="$OUT/obj/libbpf" \
	DESTDIR="$OUT" prefix= LIBDIR=/lib INCLUDEDIR=/include install >"$OUT/libbpf.log" 2>&1 ||
	{ tail -n 30 "$OUT/libbpf.log"; akts_die "libbpf build failed (log: $OUT/libbpf.log)"; }

akts_log "building bpftool from the kernel source"
make -s -C "$SRC/tools/bpf/bpftool" -j"$jobs" OUTPUT="$OUT/obj/bpftool/" CLANG=clang-19 \
	LLVM_STRIP=llvm-strip-19 feature-llvm=0 >"$OUT/bpftool.log" 2>&1 ||
	{ tail -n 30 "$OUT/bpftool.log"; akts_die "bpftool build failed (log: $OUT/bpftool.log)"; }
cp "$OUT/obj/bpftool/bpftool" "$OUT/bin/bpftool"

build_peers
touch "$stamp"
akts_log "toolchain ready in $OUT"
