#!/usr/bin/env bash
# The guest's initrd for one kernel: busybox, that kernel's virtio_blk (and its
# dependencies) and vm/initrd_init.sh, which loads them and switches to the root
# disk. Used by build_image.sh (the pinned kernel) and run.sh --kernel (another).
#
#   vm/make_initrd.sh KERNEL_DIR OUT.cpio.gz
set -euo pipefail
source "$(dirname "$0")/common.sh"

kdir=$1 out=$2
[[ -f "$kdir/modules/virtio_blk.ko" ]] || akts_die "$kdir/modules/virtio_blk.ko is missing: run vm/fetch_kernel.sh"
ird=$(mktemp -d "${TMPDIR:-/tmp}/akts-initrd.XXXXXX")
trap 'rm -rf "$ird"' EXIT
mkdir -p "$ird"/{bin,dev,proc,sys,newroot,lib/modules}
cp /bin/busybox "$ird/bin/busybox"
for applet in sh mount umount insmod switch_root mkdir sleep cat echo; do
	ln -s busybox "$ird/bin/$applet"
done
cp "$kdir"/modules/*.ko "$ird/lib/modules/"
install -m 0755 "$AKTS_ROOT/vm/initrd_init.sh" "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
