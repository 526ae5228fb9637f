#!/bin/bash
# PID 1 in the guest (switched to by the initrd). Runs the command vm/run.sh
# left in /akts/cmd with its output on the second serial port, records its
# exit status and the kernel log on the payload disk, and powers off.
export PATH=/akts/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 AKTS_IN_GUEST=1
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs shm /dev/shm
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
ip link set lo up 2>/dev/null
hostname akts-guest
# The booted kernel's config, where scx_central looks (the image holds the pinned kernel's; run.sh --kernel boots others).
[[ -f /boot/config-$(uname -r) || ! -f /akts/kernel-config ]] || cp /akts/kernel-config "/boot/config-$(uname -r)"
ulimit -l unlimited
ulimit -n 65536

out=/dev/ttyS1
stty -F "$out" raw -echo 2>/dev/null
cd /tmp
# vm/run.sh's boot watch waits for this line on the console.
echo "akts-guest: up" >/dev/ttyS0
bash /akts/cmd </dev/null >"$out" 2>&1
rc=$?
mkdir -p /akts/out
echo "$rc" >/akts/out/rc
dmesg >/akts/out/dmesg 2>/dev/null
cat /sys/kernel/sched_ext/state >/akts/out/sched_ext_state 2>/dev/null
sync
umount /akts 2>/dev/null
sync
echo b >/proc/sysrq-trigger
