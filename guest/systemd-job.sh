#!/bin/bash
# fastreap-job: run by fastreap-job.service in the Debian guest that
# `./fastreap check --groups systemd` boots (lib/deb.py).  Its standard
# output is the second serial port, which the host reads as TAP; it ends
# with "# fastreap-job done" and powers the guest off.
#
# Kernel command line: fastreap.job=boot|churn, fastreap.churn=M (transient
# services), fastreap.children=N (children of the holder services).
set -u
job=boot churn=3000 children=2000
for word in $(cat /proc/cmdline); do
	case $word in
	fastreap.job=*) job=${word#*=} ;;
	fastreap.churn=*) churn=${word#*=} ;;
	fastreap.children=*) children=${word#*=} ;;
	esac
done
splat='@SPLAT@'
n=0
tap() {     # tap 0|1 DESCRIPTION: one TAP line
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
now() { cut -d' ' -f1 /proc/uptime; }
cs() { local up; read -r up _ < /proc/uptime; echo $((10#${up/./})); }  # centiseconds
since() { local d=$(($(cs) - $1)); printf '%d.%02d' $((d / 100)) $((d % 100)); }
finish() {
	echo "1..$n"
	echo "# fastreap-job done"
	sync
	systemctl poweroff --no-block
	exit 0
}

echo "# kernel $(uname -r), job $job"
state=$(timeout 1200 systemctl is-system-running --wait 2>&1)
echo "# boot-to-running: $(now) s of guest uptime"
[ -n "$state" ] || { state="still starting after 20 min"; systemctl list-jobs --no-pager | sed 's/^/# /'; }
failed=$(systemctl --failed --plain --no-legend 2>/dev/null | cut -d' ' -f1 | tr '\n' ' ')
case $state in
running) tap 0 "systemctl is-system-running: running" ;;
degraded) tap 0 "systemctl is-system-running: degraded (failed units: ${failed% })" ;;
*) tap 1 "systemctl is-system-running: $state (failed units: ${failed% })" ;;
esac
systemd-analyze time 2>/dev/null | sed -n '1s/^/# /p'
exe=$(readlink /proc/1/exe)
case $exe in */systemd) tap 0 "pid 1 is systemd ($exe)" ;; *) tap 1 "pid 1 is $exe" ;; esac
rootdev=$(findmnt -n -o SOURCE,FSTYPE /)
case $rootdev in "/dev/vda ext4") tap 0 "root is $rootdev (virtio-blk)" ;; *) tap 1 "root is $rootdev" ;; esac

if [ "$job" = churn ]; then
	kids() { wc -w < /proc/1/task/1/children; }
	echo "# pid 1 has $(kids) children before"
	t0=$(cs)
	# A service whose main process holds N children and waits for them.
	systemd-run --quiet --unit=fastreap-holder -p TasksMax=infinity \
		/bin/bash -c "for ((i = 0; i < $children; i++)); do sleep 100000 & done; touch /run/fastreap-holder; wait"
	# And N orphans, which pid 1 (systemd) itself then holds: the 2007
	# case, every exit of a transient service below is reaped beside them.
	systemd-run --quiet --unit=fastreap-orphans -p TasksMax=infinity \
		/bin/bash -c "for ((i = 0; i < $children; i++)); do (sleep 100000 &); done; touch /run/fastreap-orphans; exec sleep infinity"
	for i in $(seq 1200); do
		[ -e /run/fastreap-holder ] && [ -e /run/fastreap-orphans ] && break
		sleep 1
	done
	held=$(systemctl show -P TasksCurrent fastreap-holder)
	orphans=$(kids)
	echo "# holders started in $(since "$t0") s"
	[ "${held:-0}" -ge "$children" ] ; tap $? "fastreap-holder.service holds $held tasks (want >= $children + 1)"
	[ "$orphans" -ge "$children" ] ; tap $? "pid 1 holds $orphans children (want >= $children)"
	t0=$(cs)
	# --no-block: systemd-run returns once pid 1 has queued the start.
	# A unit that exits 0 is garbage-collected; one that fails stays
	# "failed" (no --collect), so it is counted below.
	: > /run/fastreap-churn-refused
	seq "$churn" | xargs -P 4 -n 50 sh -c 'for i; do systemd-run --quiet --no-block -p Type=exec --unit=fastreap-churn-$i /bin/true || echo $i; done >> /run/fastreap-churn-refused' sh
	refused=$(wc -l < /run/fastreap-churn-refused)
	for i in $(seq 1200); do
		left=$(systemctl list-units --all --plain --no-legend 'fastreap-churn-*' | grep -vc ' failed ')
		[ "$left" = 0 ] && break
		sleep 1
	done
	took=$(since "$t0")
	bad=$(systemctl list-units --all --plain --no-legend --state=failed 'fastreap-churn-*' | wc -l)
	echo "# churn: $churn transient services started and reaped in $took s of guest uptime"
	[ "$refused" = 0 ] ; tap $? "systemd-run started $churn transient services ($refused refused)"
	[ "$bad" = 0 ] ; tap $? "all of them exited 0 ($bad failed)"
	[ "$left" = 0 ] ; tap $? "none left running or queued ($left)"
	t0=$(cs)
	systemctl stop fastreap-holder fastreap-orphans
	for i in $(seq 600); do [ "$(kids)" -lt 100 ] && break; sleep 1; done
	echo "# holders stopped, their children reaped, in $(since "$t0") s"
	[ "$(kids)" -lt 100 ] ; tap $? "pid 1 reaped the orphans ($(kids) children left)"
	state=$(systemctl is-system-running 2>&1)
	case $state in running|degraded) tap 0 "still $state after the churn" ;; *) tap 1 "after the churn: $state" ;; esac
fi

hits=$(journalctl -k -b -o cat --no-pager 2>/dev/null | grep -E "$splat")
[ -z "$hits" ] ; tap $? "no kernel WARNING/BUG/splat in the journal"
[ -n "$hits" ] && echo "$hits" | head -20 | sed 's/^/# /'
hits=$(dmesg 2>/dev/null | grep -E "$splat")
[ -z "$hits" ] ; tap $? "no kernel WARNING/BUG/splat in dmesg"
lines=$(journalctl -k -b -o cat --no-pager 2>/dev/null | wc -l)
[ "$lines" -gt 0 ] ; tap $? "the journal has the kernel's log ($lines lines)"
finish
