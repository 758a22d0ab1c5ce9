#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Replication with real processes: three sluiced nodes, each on a net_tap port, the three
# taps on one Linux bridge inside a network namespace this test creates (so the nodes reach
# each other and the kernel-socket clients). Topic `r`, one partition, replicas 1,2,3, leader
# 1, every node with its own data directory.
#  1. 100,000 messages are published to the leader (sluice-pub -A logs each acknowledged
#     one); after 20,000 acknowledgements follower 3 is SIGKILLed. The leader drops it from
#     the ISR and goes on with {1,2} (a majority of 3).
#  2. Node 3 restarts on its data directory, catches up from the leader and rejoins the ISR.
#     The nodes keep 4 MiB of log in memory, less than the run: what node 3 missed is
#     mostly read back from the leader's disk log.
#  3. At the end the three logs are identical (message count, and the message-log and
#     commit-log files record for record after a clean stop) and no acknowledged message
#     is missing, none is there twice, and the order is the publishing order.
. "$(dirname "$0")/lib.sh"

NS=sl-repl-$$
SUBNET=10.84.$(( $$ % 200 ))
N=100000
KILL_AT=20000

. "$(dirname "$0")/cluster.sh"

make_bridge

for id in 1 2 3; do
	boot $id --data-dir "$TMP/data$id" --log-mb 4
done
log "a few messages through the three nodes"
seq -f "warm %g" 1 10 | in_ns "$NS" "$PUB" -a "$SUBNET.11" r 2> "$TMP/warm.log" ||
	fail "warm-up publish: $(cat "$TMP/warm.log")"
echo "x" | in_ns "$NS" "$PUB" -a "$SUBNET.12" r 2> "$TMP/follower.log" &&
	fail "a follower took a publish"
grep -q "not the partition leader" "$TMP/follower.log" || fail "follower: $(cat "$TMP/follower.log")"

log "phase 1: $N messages; follower 3 is SIGKILLed after $KILL_AT acknowledgements"
seq -f "replicated message %06g" 1 $N > "$TMP/in.txt"
publish_until "$NS" "$SUBNET.11" r "$TMP/in.txt" "$TMP/acked.txt" $KILL_AT
kill -KILL "${NODE_PID[3]}"
wait "${NODE_PID[3]}" 2>/dev/null
log "node 3 killed at $(wc -l < "$TMP/acked.txt") acknowledged; the leader drops it"
wait_isr 1,2
wait_isr 1,2 2
log "node 2's view follows the leader's ISR (1,2)"

# node 3 comes back after the leader has moved on by more than its memory holds
for i in $(seq 600); do
	[ "$(wc -l < "$TMP/acked.txt")" -ge $((KILL_AT + 50000)) ] && break
	sleep 0.1
done
log "phase 2: node 3 restarts, catches up and rejoins"
boot 3 --data-dir "$TMP/data3" --log-mb 4
# node 3 starts from the cluster file's view (in the ISR); the leader's VIEW tells it it
# is not, so it catches up and asks to rejoin, with no operator step
wait_isr 1,2,3
wait_isr 1,2,3 3
wait "$PUBPID" || fail "sluice-pub failed: $(cat "$TMP/acked.txt.log")"
recs=$(ctl n1 storage status | python3 -c 'import json,sys; print(json.load(sys.stdin)["replication_disk_records"])')
[ "$recs" -gt 0 ] || fail "node 3 caught up without reading the leader's disk log"
log "node 3 caught up; $recs records of it came from the leader's disk log"
ACKED=$(wc -l < "$TMP/acked.txt")
[ "$ACKED" = $N ] || fail "only $ACKED of $N acknowledged"

log "phase 3: the three logs"
wait_counts
in_ns "$NS" "$SUB" -a "$SUBNET.11" -c check -n "$c1" -t 30 --from-start r \
	> "$TMP/out.txt" 2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
python3 - "$TMP/out.txt" "$TMP/in.txt" <<'PY' || fail "the leader's log"
import collections, sys
got = [l for l in open(sys.argv[1]).read().split("\n")[:-1] if not l.startswith("warm")]
sent = open(sys.argv[2]).read().split("\n")[:-1]
dup = [m for m, n in collections.Counter(got).items() if n > 1]
missing = set(sent) - set(got)
assert not missing, "%d acknowledged messages missing, e.g. %s" % (len(missing), sorted(missing)[:3])
assert not dup, "%d messages twice, e.g. %s" % (len(dup), dup[:3])
assert got == sent, "out of order"
PY
log "an ordered channel: each FIN counts once every ISR member has it"
in_ns "$NS" "$SUB" -a "$SUBNET.11" -o -c ord -n 2000 -t 30 --from-start r > "$TMP/ord.txt" \
	2> "$TMP/ord.log" || fail "ordered sluice-sub: $(cat "$TMP/ord.log")"
head -n 2000 "$TMP/out.txt" | cmp - "$TMP/ord.txt" || fail "the ordered channel's order"
chan_pos() {
	ctl "n$1" channel list r | python3 -c '
import json, sys
c = [x for x in json.load(sys.stdin)["channels"] if x["name"] == "ord"]
print(c[0]["confirmed_count"] if c else -1)'
}
for id in 2 3; do
	for i in $(seq 50); do
		[ "$(chan_pos "$id")" = 2000 ] && break
		sleep 0.1
	done
	[ "$(chan_pos "$id")" = 2000 ] || fail "node $id holds channel ord at $(chan_pos "$id")"
done
log "the followers hold the ordered channel's position (2000)"
stop_compare
log "three identical logs of $c1 messages; all $N acknowledged messages present, once, in order"
log "PASS"
