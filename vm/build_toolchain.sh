#!/usr/bin/env bash
# Builds a matched libbpf + bpftool from the pinned kernel's own source tree
# (the pair its tools/sched_ext builds with) into $AKTS_CACHE/toolchain:
#   toolchain/include/bpf/*.h, toolchain/lib/libbpf.a, toolchain/bin/bpftool
# and the kernel's peer schedulers (scx_simple, ...) into toolchain/scx/.
set -euo pipefail
source "$(dirname "$0")/common.sh"

SRC="$AKTS_CACHE/kernel/src"
OUT="$AKTS_CACHE/toolchain"
[[ -d "$SRC/tools/lib/bpf" ]] || akts_die "kernel source missing: run vm/fetch_kernel.sh first"
stamp="$OUT/stamp-$(cat "$AKTS_CACHE/kernel/release")"
# The kernel's own example schedulers are the peers akts is measured against (their own stamp: adding one
# rebuilds only them).
PEERS=(scx_simple scx_central scx_flatcg)
peers_stamp="$OUT/stamp-peers-$(cat "$AKTS_CACHE/kernel/release")-$(
	IFS=-
	echo "${PEERS[*]}"
)"
build_peers() {
	akts_log "building the kernel's tools/sched_ext peer schedulers: ${PEERS[*]}"
	mkdir -p "$OUT/obj/scx" "$OUT/scx"
	local p bin built=0
	# One at a time: a peer that does not build costs only its own rows (and is tried again next setup).
	for p in "${PEERS[@]}"; do
		if make -s -C "$SRC/tools/sched_ext" -j"$jobs" CLANG=clang-19 LLVM_STRIP=llvm-strip-19 \
			VMLINUX_BTF="$AKTS_CACHE/kernel/vmlinux" O="$OUT/obj/scx" "$p" >"$OUT/scx-$p.log" 2>&1 &&
			bin=$(find "$OUT/obj/scx" -path "*/bin/*" -type f -name "$p" -perm -u+x | head -n 1) && [[ -n $bin ]]; then
			cp "$bin" "$OUT/scx/"
			built=$((built + 1))
		else
			akts_warn "the peer $p did not build (log: $OUT/scx-$p.log); benchmarks against it will be skipped"
		fi
	done
	((built == ${#PEERS[@]})) && touch "$peers_stamp"
	return 0
}
jobs=$(nproc)
if [[ -f "$stamp" ]]; then
	[[ -f "$peers_stamp" ]] || build_peers
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
