#!/usr/bin/env bash
# Builds the guest's root filesystem (Debian sid, minbase, with the workloads)
# and a tiny busybox initrd that loads virtio_blk and switches to it:
#   $AKTS_CACHE/image/rootfs.ext4   booted read-only-ish (QEMU snapshot=on)
#   $AKTS_CACHE/image/initrd.cpio.gz
# The LC workload's model, a random-weight llama GGUF, is written inside it
# (python3-gguf needs sid's glibc): /opt/akts/models/random-llama.gguf. The MCP
# clients from npm (vm/fetch_npm.sh) go to /opt/akts/mcp/node_modules.
# The image is rebuilt only when the package list, this script or the model's
# generator changes.
set -euo pipefail
source "$(dirname "$0")/common.sh"

# Workloads the tests, benchmarks and demos run in the guest; all from Debian.
GUEST_PACKAGES=(
	stress-ng rt-tests sysbench procps util-linux coreutils kmod iproute2
	llama.cpp-tools python3-gguf curl ca-certificates nodejs
	# The GPU-shaped serving node's stand-in for the accelerator: ggml-rpc-server and llama.cpp's RPC backend.
	llama.cpp-tools-extra libggml0-backend-rpc
	clang # admission's gate 1 runs where the daemon runs (akts's and libbpf's headers come with each run's payload)
	tmux  # akts top's guest test drives it in a terminal (tests/guest/t_top.sh)
)

OUT="$AKTS_CACHE/image"
KDIR="$AKTS_CACHE/kernel"
key=$( (
	echo "${GUEST_PACKAGES[*]}"
	cat "$0" "$AKTS_ROOT/vm/initrd_init.sh" "$AKTS_ROOT/serving/make_model.py" "$AKTS_ROOT/tests/mcp/package-lock.json"
	cat "$KDIR/release"
) | sha256sum | cut -c1-16)
[[ -f "$OUT/stamp-$key" && -f "$OUT/rootfs.ext4" && -f "$OUT/initrd.cpio.gz" ]] && exit 0
[[ $(id -u) -eq 0 ]] || akts_die "building the guest image needs root (debootstrap)"
[[ -f "$KDIR/modules/virtio_blk.ko" ]] || akts_die "kernel modules missing: run vm/fetch_kernel.sh first"
[[ -d "$AKTS_CACHE/npm/node_modules" ]] || akts_die "the MCP clients are missing: run vm/fetch_npm.sh first"

rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
root="$OUT.tmp/root"
mirror=$(akts_debian_mirror)
akts_log "debootstrap sid (minbase) with: ${GUEST_PACKAGES[*]} (about a minute and a half)"
include=$(
	IFS=,
	echo "${GUEST_PACKAGES[*]}"
)
debootstrap --variant=minbase --include="$include" sid "$root" "$mirror" >"$OUT.tmp/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$OUT.tmp/debootstrap.log"; akts_die "debootstrap failed (log: $OUT.tmp/debootstrap.log)"; }
rm -f "$root"/var/cache/apt/archives/*.deb
echo akts-guest >"$root/etc/hostname"
mkdir -p "$root/akts" "$root/boot"
# scx_central and friends look for the running kernel's config here.
cp "$KDIR/config" "$root/boot/config-$(cat "$KDIR/release")"

akts_log "writing the random-weight llama model for llama-server (serving/make_model.py, in the image)"
mkdir -p "$root/opt/akts/models"
install -m 0644 "$AKTS_ROOT/serving/make_model.py" "$root/opt/akts/make_model.py"
chroot "$root" /usr/bin/python3 /opt/akts/make_model.py /opt/akts/models/random-llama.gguf \
	>"$OUT.tmp/model.log" 2>&1 || { cat "$OUT.tmp/model.log"; akts_die "writing the model failed"; }

# The MCP clients written by others (vm/fetch_npm.sh): the guest has no network.
mkdir -p "$root/opt/akts/mcp"
cp -a "$AKTS_CACHE/npm/node_modules" "$AKTS_CACHE/npm/package.json" "$root/opt/akts/mcp/"

akts_log "making the ext4 image"
size_mb=$(($(du -sm "$root" | cut -f1) + 512))
mkfs.ext4 -q -F -L akts-root -d "$root" "$OUT.tmp/rootfs.ext4" "${size_mb}M"

akts_log "making the initrd"
bash "$AKTS_ROOT/vm/make_initrd.sh" "$KDIR" "$OUT.tmp/initrd.cpio.gz"

rm -rf "$root"
touch "$OUT.tmp/stamp-$key"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
akts_log "guest image ready in $OUT"
