#!/bin/sh
# The initrd's /init (busybox): load the block driver, mount the root image and
# the run's payload disk, and hand over to the payload's init script.
mount -t devtmpfs dev /dev
mount -t proc proc /proc
mount -t sysfs sys /sys
for m in /lib/modules/*.ko; do insmod "$m"; done
i=0
while [ ! -b /dev/vda ] || [ ! -b /dev/vdb ]; do
	i=$((i + 1))
	[ $i -gt 200 ] && { echo "akts-initrd: no /dev/vda or /dev/vdb" >/dev/console; exec sh; }
	sleep 0.05
done
mount -t ext4 /dev/vda /newroot || { echo "akts-initrd: cannot mount rootfs" >/dev/console; exec sh; }
mount -t ext4 /dev/vdb /newroot/akts || { echo "akts-initrd: cannot mount payload" >/dev/console; exec sh; }
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /akts/guest_init.sh
