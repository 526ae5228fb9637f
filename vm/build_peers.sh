#!/usr/bin/env bash
# Builds the kernel's own example schedulers, the peers akts is measured and
# tested against (scx_simple, scx_central, scx_flatcg), from one kernel's
# tools/sched_ext against that kernel's BTF, into OUT_DIR/bin (objects in
# OUT_DIR/obj, each peer's build log in OUT_DIR). One at a time: a peer
# that does not build costs only its own rows and is tried again next time. A
# stamp names the kernel and the peers, so a finished set is not rebuilt.
#
#   vm/build_peers.sh KERNEL_DIR OUT_DIR
set -euo pipefail
source "$(dirname "$0")/common.sh"

kdir=$1 out=$2
[[ -d "$kdir/src/tools/sched_ext" && -f "$kdir/vmlinux" ]] || akts_die "$kdir has no tools/sched_ext or vmlinux"
PEERS=(scx_simple scx_central scx_flatcg)
stamp="$out/stamp-peers-$(cat "$kdir/release")-$(
	IFS=-
	echo "${PEERS[*]}"
)"
[[ -f "$stamp" ]] && exit 0
akts_log "building the kernel's tools/sched_ext peer schedulers for $(cat "$kdir/release"): ${PEERS[*]}"
mkdir -p "$out/obj" "$out/bin"
built=0
for p in "${PEERS[@]}"; do
	if make -s -C "$kdir/src/tools/sched_ext" -j"$(nproc)" CLANG=clang-19 LLVM_STRIP=llvm-strip-19 \
		VMLINUX_BTF="$kdir/vmlinux" O="$out/obj" "$p" >"$out/scx-$p.log" 2>&1 &&
		bin=$(find "$out/obj" -path "*/bin/*" -type f -name "$p" -perm -u+x | head -n 1) && [[ -n $bin ]]; then
		cp "$bin" "$out/bin/"
		built=$((built + 1))
	else
		akts_warn "the peer $p did not build (log: $out/scx-$p.log); benchmarks and tests against it will be skipped"
	fi
done
((built == ${#PEERS[@]})) && touch "$stamp"
exit 0
