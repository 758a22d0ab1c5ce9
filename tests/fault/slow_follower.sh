#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A follower on a slow link leaves the ISR by time, and writes keep flowing (issue 13,
# point 6). Three sluiced nodes on one bridge (tests/integration/cluster.sh), topic `r`,
# replicas 1,2,3, leader 1, --isr-lag-ms 1000. While a pipelined publisher keeps about
# 140 KB in flight (127 messages of 1,100 bytes: more than 1 s at 1 Mbit/s),
# the link toward follower 3 is throttled to 1 Mbit/s (tc tbf on its tap, bridge side).
#  1. Node 3 must leave the leader's ISR within the lag window plus the ISR change: a
#     follower stays only while it held the leader's whole log within the last window;
#     progress alone does not keep it (before, every ack reset its timer and it stayed,
#     stalling every write for seconds).
#  2. Acknowledgements keep flowing: no gap of 3 s or more in the acknowledged count.
#  3. With the throttle lifted node 3 catches up and is back in the ISR, and every
#     acknowledged message is in the leader's log once, in order.
# Prints the time to leave and the longest acknowledgement gap.
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-slow-$$
SUBNET=10.86.$(( $$ % 200 ))
N=40000

. "$(dirname "$0")/../integration/cluster.sh"

make_bridge
for id in 1 2 3; do
	boot $id --isr-lag-ms 1000 --log-mb 96 --window 127
done
IF3=slr3$$
IF3=${IF3:0:15}

wait_isr 1,2,3
seq -f "warm %g" 1 10 | in_ns "$NS" "$PUB" -a "$SUBNET.11" r 2> "$TMP/warm.log" ||
	fail "warm-up publish: $(cat "$TMP/warm.log")"
log "one publisher, $N messages of 1,100 bytes, window 127, to the leader"
python3 -c '
import sys
for i in range(1, int(sys.argv[1]) + 1):
    print("a slow-follower message %08d " % i + "x" * 1076)' $N > "$TMP/in-a.txt"
publish_until "$NS" "$SUBNET.11" r "$TMP/in-a.txt" "$TMP/acked.txt" 2000 -w 127
wait_isr 1,2,3

# the acknowledged count every 50 ms, until told to stop: the longest time it stood still
python3 - "$TMP/acked.txt" "$TMP/gap.txt" "$TMP/gap.stop" <<'PY' &
import os, sys, time
path, out, stop = sys.argv[1:4]
def count():
    with open(path, "rb") as f:
        return sum(1 for _ in f)
last_n, last_t, worst = count(), time.monotonic(), 0.0
while not os.path.exists(stop):
    time.sleep(0.05)
    n, t = count(), time.monotonic()
    if n != last_n:
        last_n, last_t = n, t
    worst = max(worst, t - last_t)
open(out, "w").write("%.3f\n" % worst)
PY
GAPPID=$!
PIDS+=("$GAPPID")

log "throttling the link toward node 3 to 1 Mbit/s"
in_ns "$NS" tc qdisc add dev "$IF3" root tbf rate 1mbit burst 16kb limit 8mb ||
	fail "tc on $IF3"
t0=$(date +%s.%N)
wait_isr 1,2
t1=$(date +%s.%N)
left=$(python3 -c "print('%.2f' % ($t1 - $t0))")
log "node 3 left the ISR ${left} s after the throttle (window 1 s)"
python3 -c "import sys; sys.exit(0 if $left < 3.0 else 1)" ||
	fail "node 3 left the ISR only after $left s"

# writes go on with {1,2} for a while, then the link is whole again
base=$(wc -l < "$TMP/acked.txt")
for i in $(seq 300); do
	[ "$(wc -l < "$TMP/acked.txt")" -ge $((base + 5000)) ] && break
	kill -0 "$PUBPID" 2>/dev/null || break
	sleep 0.1
done
[ "$(wc -l < "$TMP/acked.txt")" -gt "$base" ] || fail "no acknowledgement after node 3 left"
in_ns "$NS" tc qdisc del dev "$IF3" root || fail "tc del"
log "throttle lifted; node 3 catches up and rejoins"
wait_isr 1,2,3
touch "$TMP/gap.stop"
wait "$GAPPID"
gap=$(cat "$TMP/gap.txt")
log "longest time without a new acknowledgement: ${gap} s"
python3 -c "import sys; sys.exit(0 if $gap < 3.0 else 1)" ||
	fail "acknowledgements stood still for $gap s"

wait "$PUBPID" || fail "sluice-pub a failed: $(cat "$TMP/acked.txt.log")"
[ "$(wc -l < "$TMP/acked.txt")" = $N ] || fail "only $(wc -l < "$TMP/acked.txt") of $N acknowledged"
wait_counts
in_ns "$NS" "$SUB" -a "$SUBNET.11" -c check -n "$c1" -t 60 --from-start r \
	> "$TMP/out.txt" 2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
for w in a; do
	grep "^$w " "$TMP/out.txt" | cmp -s - "$TMP/in-$w.txt" ||
		fail "publisher $w's messages are not in the leader's log once each, in order"
done
log "OK: left in $left s, longest acknowledgement gap $gap s, $N messages in order"
