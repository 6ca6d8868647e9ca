#!/bin/sh
# Show that every JC_EXPECT_*() check of a jobctl test program can fail:
# run it once per K with JOBCTL_FLIP=K (the K-th check of every test
# expects the opposite) and compare the failing tests with those that
# have K checks or more (each test logs "N checks" when it passes).
#   tests/jobctl/flipcheck.sh BINARY
set -eu
bin=$1
base=$("$bin" 2>&1) || { echo "$bin fails unflipped"; exit 1; }
counts=$(echo "$base" | sed -n 's/^# [^:]*:[0-9]*:\([a-z_0-9]*\):\([0-9]*\) checks$/\1 \2/p')
max=$(echo "$counts" | awk '$2 > m { m = $2 } END { print m + 0 }')
bad=0
k=1
while [ "$k" -le "$max" ]; do
	want=$(echo "$counts" | awk -v k="$k" '$2 >= k { print $1 }' | sort)
	got=$(JOBCTL_FLIP=$k "$bin" 2>&1 | sed -n 's/^not ok [0-9]* [a-z_]*\.\([a-z_0-9]*\).*/\1/p' | sort)
	if [ "$want" != "$got" ]; then
		echo "K=$k: expected to fail: $(echo $want); failed: $(echo $got)"
		bad=1
	else
		echo "K=$k: $(echo "$got" | wc -w) test(s) fail, as they must"
	fi
	k=$((k + 1))
done
exit $bad
