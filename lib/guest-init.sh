#!/bin/sh
# PID 1 of a fastreap guest, in the manner of virtme-ng: the root file
# system is the host's, read-only over virtio-9p.  Mount the pseudo file
# systems, mount the run directory the host shares back (at the same path
# as on the host), run the one job the runner wrote there, record its exit
# status and the kernel log, and power off.  lib/workbench.py reads what
# this leaves behind; keep the file names in step with it.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8 TERM=dumb

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# The root is read-only: give programs the scratch space they expect.
# This hides the host's /tmp, so guest binaries must live elsewhere.
for dir in /tmp /run /var/tmp /var/log; do
	mount -t tmpfs -o mode=1777 tmpfs "$dir"
done
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null

job=$(sed -n 's/.* fastreap\.job=\([^ ]*\).*/\1/p' /proc/cmdline)
rundir=${job%/*}
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none \
	fastreap-run "$rundir"
echo "fastreap-guest: init started" >/dev/console

# The job script sets the working directory and the environment, then
# runs the command; see write_job() in lib/workbench.py.
sh "$job" <"/dev/null" >"$rundir/output" 2>&1
echo $? >"$rundir/status.tmp"
dmesg >"$rundir/dmesg.txt"
mv "$rundir/status.tmp" "$rundir/status"
sync
echo "fastreap-guest: job done" >/dev/console
echo b >/proc/sysrq-trigger
