#!/bin/sh
# PID 1 of a fastreap guest, in the manner of virtme-ng: the root file
# system is the host's, read-only over virtio-9p.  Mount the pseudo file
# systems and scratch tmpfs, then the host directories those would hide
# (read-only 9p shares, each at its own path), then the run directory the
# host shares back (writable, at the same path as on the host); run the one
# job the runner wrote there, record its exit status and the kernel log,
# and power off.  lib/runner.py (boot(), write_guest_mounts()) writes
# what this reads and reads what it leaves behind; keep them in step.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8 TERM=dumb

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
# What udev would add and devtmpfs does not ("cat /dev/stdin").
ln -sfn /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# The root is read-only: give programs the scratch space they expect.
# This hides the host's files there; the runner shares back the ones the
# job needs.  The list is the runner's GUEST_SCRATCH (lib/runner.py),
# passed as fastreap.scratch=DIR,DIR,... on the kernel command line.
scratch=
for word in $(cat /proc/cmdline); do
	case $word in fastreap.scratch=*) scratch=${word#*=} ;; esac
done
for dir in $(echo "$scratch" | tr , ' '); do
	mount -t tmpfs -o mode=1777 tmpfs "$dir"
done
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null

# The run directory first, at a fixed place: it says what else to mount.
# Host paths never pass through the kernel command line, which would split
# them at spaces.
run=/run/fastreap-run
mkdir -p "$run"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none \
	fastreap-run "$run"
# "TAG PATH" per line: a working directory, the repository or the cache
# that lies under one of the tmpfs above.  The mount point is made in the
# tmpfs; read-only like the root.  A mount that fails must not leave the
# job in an empty directory that looks right: the job is then not run,
# and the runner reports the console line.
failed=
while IFS= read -r line; do
	tag=${line%% *} dir=${line#* }
	mkdir -p "$dir"
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro \
		"$tag" "$dir" || failed="$failed $dir"
done <"$run/mounts"
# Last, the run directory at its host path too: writable even inside a
# read-only share, and where $FASTREAP_OUT and job.sh point.
rundir=$(cat "$run/hostpath")
mkdir -p "$rundir" 2>/dev/null
mount --bind "$run" "$rundir" || failed="$failed $rundir"
echo "fastreap-guest: init started" >/dev/console

if [ -n "$failed" ]; then
	echo "fastreap-guest: cannot mount:$failed" >/dev/console
else
	# The job script sets the working directory and the environment,
	# then runs the command; see write_job() in lib/runner.py.
	sh "$run/job.sh" <"/dev/null" >"$run/output" 2>&1
	echo $? >"$run/status.tmp"
	dmesg >"$run/dmesg.txt"
	mv "$run/status.tmp" "$run/status"
fi
sync
echo "fastreap-guest: job done" >/dev/console
echo b >/proc/sysrq-trigger
