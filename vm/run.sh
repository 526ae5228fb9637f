#!/usr/bin/env bash
# Boots the sched_ext guest (QEMU TCG) and runs one command in it.
#
#   vm/run.sh [--kernel VERSION] [--timeout SECONDS] [--expect-log REGEX]... [--out DIR] [--file PATH]... -- CMD [ARGS...]
#   vm/run.sh --kernel list
#
# The project's built binaries are on the guest's PATH (/akts/bin). CMD's output
# streams here; its exit status is this script's. The run fails (exit 125) if
# the guest's kernel log shows an Oops, BUG, WARNING, panic or a sched_ext
# error that no --expect-log REGEX declares, or if the guest does not come up
# (its init reaches CMD) within AKTS_VM_BOOT_TIMEOUT seconds (default 300; a
# boot takes about 5 s under TCG; 0: no watch): the guest is stopped then, and
# --out DIR holds a file boot-hang. --out DIR receives what CMD wrote
# under /akts/out in the guest (plus the guest's dmesg). --file PATH copies an
# extra file into the guest's /akts/bin. --kernel boots another of the registry's
# sched_ext kernels than the pinned one (a version, or oldest / newest; `list`
# prints them): it is fetched and its peer schedulers built on first use. akts,
# built against the pinned kernel's BTF, loads where that kernel can call the
# kfuncs it needs, with fallbacks for the others (vm/kfunc_compat.py; oldest and
# newest are chosen so; docs/deploy.md, More kernels).
set -euo pipefail
source "$(dirname "$0")/common.sh"

timeout_s=1800
boot_s=${AKTS_VM_BOOT_TIMEOUT:-300}
[[ $boot_s =~ ^[0-9]+$ ]] || akts_die "AKTS_VM_BOOT_TIMEOUT='$boot_s' is not a number of seconds (0: no watch)"
out_dir=""
expects=()
files=()
kernel=""
while (($#)); do
	case "$1" in
	--kernel) kernel="$2"; shift 2 ;;
	--timeout) timeout_s="$2"; shift 2 ;;
	--expect-log) expects+=("$2"); shift 2 ;;
	--out) out_dir="$2"; shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--) shift; break ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) break ;;
	esac
done
if [[ $kernel == list ]]; then
	akts_private_apt_init
	echo "sched_ext cloud kernels in the registry (pinned: $AKTS_KERNEL_VERSION):"
	akts_private_apt_cache search '^linux-binary-unsigned-.*-cloud-amd64$' |
		sed -E 's/^linux-binary-unsigned-([^ ]+) .*/  \1/' | sort -V
	exit 0
fi
(($#)) || akts_die "usage: vm/run.sh [options] -- CMD [ARGS...]"

KDIR="$AKTS_CACHE/kernel"
IMG="$AKTS_CACHE/image"
initrd="$IMG/initrd.cpio.gz"
peers="$AKTS_CACHE/toolchain/scx/bin"
if [[ -n "$kernel" ]]; then
	KDIR=$(bash "$AKTS_ROOT/vm/fetch_kernel.sh" "$kernel") || exit 1
	if [[ $KDIR != "$AKTS_CACHE/kernel" ]]; then
		[[ -f "$KDIR/initrd.cpio.gz" ]] || bash "$AKTS_ROOT/vm/make_initrd.sh" "$KDIR" "$KDIR/initrd.cpio.gz"
		initrd="$KDIR/initrd.cpio.gz"
		bash "$AKTS_ROOT/vm/build_peers.sh" "$KDIR" "$KDIR/scx"
		peers="$KDIR/scx/bin"
	fi
fi
for f in "$KDIR/vmlinux" "$IMG/rootfs.ext4" "$initrd" "$AKTS_BUILD/akts"; do
	[[ -f "$f" ]] || akts_die "$f is missing: run ./akts setup"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/akts-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
payload="$work/payload"
mkdir -p "$payload/bin" "$payload/out"
cp "$AKTS_BUILD/akts" "$payload/bin/"
for f in "$AKTS_BUILD"/bpf/*.bpf.o; do [[ -f "$f" ]] && mkdir -p "$payload/bpf" && cp "$f" "$payload/bpf/"; done
# The headers a policy compiles against (admission's gate 1 in the guest), in the installed layout akts looks
# for beside its binary: akts's own, the kernel's scx/ and bpf-compat/, libbpf's bpf/.
mkdir -p "$payload/include"
cp "$AKTS_ROOT"/bpf/*.h "$payload/include/"
for d in "$KDIR/src/tools/sched_ext/include/." "$AKTS_CACHE/toolchain/include/bpf"; do
	[[ -d "$d" ]] && cp -r "$d" "$payload/include/" || akts_log "no $d: gate 1 cannot compile in this guest"
done
[[ -d "$peers" ]] && cp "$peers"/* "$payload/bin/" 2>/dev/null || true
# The kernel's config where scx_central looks for it (the image holds the pinned kernel's only).
cp "$KDIR/config" "$payload/kernel-config"
for f in "${files[@]}"; do cp -r "$f" "$payload/bin/"; done
install -m 0755 "$AKTS_ROOT/vm/guest_init.sh" "$payload/guest_init.sh"
{
	echo "cd /tmp"
	printf 'exec'
	printf ' %q' "$@"
	echo
} >"$payload/cmd"
mkfs.ext4 -q -F -L akts-payload -d "$payload" "$work/payload.ext4" 512M >/dev/null

console="$work/console.log"
: >"$console"
set +e
timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 \
	-accel tcg -cpu max -smp "${AKTS_VM_CPUS:-2}" -m "${AKTS_VM_MEM:-2048}" \
	-display none -monitor none -no-reboot -net none \
	-kernel "$KDIR/vmlinux" -initrd "$initrd" \
	-drive file="$IMG/rootfs.ext4",if=virtio,format=raw,snapshot=on \
	-drive file="$work/payload.ext4",if=virtio,format=raw \
	-append "console=ttyS0 quiet panic=-1 oops=panic rw mitigations=off" \
	-serial file:"$console" -chardev stdio,id=cmdout,signal=off -serial chardev:cmdout </dev/null &
qpid=$!
# An interrupt or a TERM stops the guest (timeout passes the TERM on to QEMU), and what it wrote is still collected
# below; then this script dies of that signal, so that its caller stops too.
sig=""
on_exit() {
	[[ -z $qpid ]] || kill "$qpid" 2>/dev/null || true
	rm -rf "$work"
	if [[ -n $sig ]]; then
		trap - "$sig" EXIT
		kill -"$sig" $$
	fi
}
trap on_exit EXIT
trap 'sig=INT; [[ -z $qpid ]] || kill "$qpid" 2>/dev/null || true' INT
trap 'sig=TERM; [[ -z $qpid ]] || kill "$qpid" 2>/dev/null || true' TERM
# Boot watch: guest_init.sh writes "akts-guest: up" on the console just before CMD. A guest that never gets there
# (seen once in a clean-clone run: the oldest kernel's guest printed nothing for 24 minutes, until the run's
# timeout) is stopped, and said so.
booted=0
if ((boot_s > 0)); then
	boot_end=$((SECONDS + boot_s))
	while ((SECONDS < boot_end)) && [[ -z $sig ]]; do
		grep -aq '^akts-guest: up' "$console" 2>/dev/null && { booted=1; break; }
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.5
	done
	grep -aq '^akts-guest: up' "$console" 2>/dev/null && booted=1
	if ((!booted)) && [[ -z $sig ]] && kill -0 "$qpid" 2>/dev/null; then
		akts_warn "the guest did not come up within ${boot_s}s (no 'akts-guest: up' on its console): stopping it"
		touch "$work/boot-hang"
		kill -TERM "$qpid" 2>/dev/null
	fi
fi
# Until QEMU has ended: a trapped signal ends a wait early.
while :; do
	wait "$qpid"
	qemu_rc=$?
	kill -0 "$qpid" 2>/dev/null || break
done
qpid=""
set -e

debugfs -R "rdump /out $work" "$work/payload.ext4" >/dev/null 2>&1 || true
rc=$(cat "$work/out/rc" 2>/dev/null || echo "")
kernel_log="$work/kernel.log"
cat "$console" "$work/out/dmesg" 2>/dev/null >"$kernel_log" || true
if [[ -n "$out_dir" ]]; then
	mkdir -p "$out_dir"
	cp -r "$work/out/." "$out_dir/" 2>/dev/null || true
	cp "$console" "$out_dir/console.log"
fi

# Kernel trouble fails the run unless the test declared it expected: with
# --expect-log, or from inside the guest, one regex a line in /akts/out/expected-log.
bad=$(grep -aE 'Oops|BUG:|WARNING:|Kernel panic|general protection|sched_ext: .*(error|stall)|sched_ext: BPF scheduler .* disabled \(' "$kernel_log" |
	grep -avE 'disabled \(unregistered from user space\)' || true)
if [[ -f "$work/out/expected-log" ]]; then
	while IFS= read -r re; do [[ -n "$re" ]] && expects+=("$re"); done <"$work/out/expected-log"
fi
for re in "${expects[@]}"; do
	bad=$(grep -avE "$re" <<<"$bad" || true)
done
if [[ -n "$bad" ]]; then
	akts_warn "unexpected kernel messages in the guest:"
	echo "$bad" | head -n 20 >&2
	[[ -n "$out_dir" ]] || cp "$kernel_log" "${TMPDIR:-/tmp}/akts-last-kernel.log"
	exit 125
fi
if [[ -z "$rc" ]]; then
	if [[ -f $work/boot-hang ]]; then
		# Only here, past the kernel's check: ./akts test boots a pass once more on it, never past kernel trouble.
		[[ -z $out_dir ]] || touch "$out_dir/boot-hang"
		akts_warn "the guest was stopped: it did not come up within ${boot_s}s; last console lines:"
		tail -n 20 "$console" >&2
	elif ((qemu_rc == 124)); then
		akts_warn "the guest timed out after ${timeout_s}s"
	else
		akts_warn "the guest ended without reporting an exit status (qemu exit $qemu_rc); last console lines:"
		tail -n 20 "$console" >&2
	fi
	exit 125
fi
exit "$rc"
