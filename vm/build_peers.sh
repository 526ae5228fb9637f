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

kdir=${1:-} out=${2:-}
[[ -n $kdir && -n $out ]] || akts_die "usage: vm/build_peers.sh KERNEL_DIR OUT_DIR"
[[ -d "$kdir/src/tools/sched_ext" && -f "$kdir/vmlinux" ]] || akts_die "$kdir has no tools/sched_ext or vmlinux"
PEERS=(scx_simple scx_central scx_flatcg)
# A kernel whose build left sched_ext kfuncs uncallable (vm/kfunc_compat.py: some 7.2.x kernels) cannot run
# its own examples as they are; there each BPF source is compiled with akts's fallbacks ahead of it
# (bpf/akts_kfunc_compat.bpf.h: -include, through a clang wrapper, as the tree's Makefile has no hook).
# They cover what akts needs: a peer that calls another uncallable kfunc still does not load there (7.2.11's
# scx_bpf_dispatch_nr_slots, which scx_central calls), and its rows are skipped.
uncallable=$(python3 "$AKTS_ROOT/vm/kfunc_compat.py" --uncallable "$AKTS_CACHE/toolchain/bin/bpftool" "$kdir/vmlinux")
clang=clang-19 with=""
mkdir -p "$out/obj" "$out/bin"
if [[ -n "$uncallable" ]]; then
	clang="$out/clang-with-akts-fallbacks"
	with="-with-akts-fallbacks-$(sha256sum "$AKTS_ROOT/bpf/akts_kfunc_compat.bpf.h" | cut -c1-12)"
	cat >"$clang" <<-EOF
		#!/bin/sh
		# clang-19, with akts's kfunc fallbacks ahead of every BPF source (vm/build_peers.sh).
		case " \$* " in *" -target bpf "*) exec clang-19 -include "$AKTS_ROOT/bpf/akts_kfunc_compat.bpf.h" "\$@" ;; esac
		exec clang-19 "\$@"
	EOF
	chmod +x "$clang"
fi
stamp="$out/stamp-peers-$(cat "$kdir/release")-$(
	IFS=-
	echo "${PEERS[*]}"
)$with"
[[ -f "$stamp" ]] && exit 0
akts_log "building the kernel's tools/sched_ext peer schedulers for $(cat "$kdir/release"): ${PEERS[*]}"
[[ -n "$with" ]] && akts_log "with akts's fallbacks for the kfuncs this kernel cannot call: ${uncallable//$'\n'/ }"
rm -rf "$out/obj" "$out"/bin/* # objects built the other way would count as up to date
mkdir -p "$out/obj"
built=0
for p in "${PEERS[@]}"; do
	if make -s -C "$kdir/src/tools/sched_ext" -j"$(nproc)" CLANG="$clang" LLVM_STRIP=llvm-strip-19 \
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
