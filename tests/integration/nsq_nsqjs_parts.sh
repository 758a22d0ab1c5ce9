#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# nsqjs (npm, pinned), unchanged, through sluice-nsqd to a topic whose partitions lead on
# different nodes: the three-node static cluster of cluster.sh with topic `r` in three
# partitions, replicas 1,2,3 each, partition P led by node P+1. One nsqjs Reader (one NSQ
# connection, one SUB) and a Writer (MPUBs of 32 and PUBs) through one gateway given the
# three nodes (nsqjs_parts.js). Every partition must receive messages (the gateway spreads
# its publishes), and the Reader must get every acknowledged message.
#   NSQ_PARTS_FAILOVER unset: every message consumed exactly once (FIN'd), no publish failed.
#   NSQ_PARTS_FAILOVER=1: half way (the second half paced, one MPUB or 32 PUBs per 50 ms),
#     node 1 (leader of partition 0) is SIGKILLed and node 2 made leader of partition 0
#     (`sluicectl partition set`, as a controller would); nothing the Writer got
#     acknowledged may be lost; duplicates are counted and printed (NSQ's at-least-once
#     allows them).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsq_lib.sh"

FAILOVER=${NSQ_PARTS_FAILOVER:-0}
NS=sl-njsp-$$
SUBNET=10.91.$(( $$ % 200 ))
N=${NSQJS_PARTS_N:-4000}
HALF=$((N / 2))

. "$(dirname "$0")/cluster.sh"

# part_show NODE P: "replicas isr leader" of partition P of r in NODE's view
part_show() {
	ctl "n$1" partition show r "$2" | python3 -c '
import json, sys
p = json.load(sys.stdin)["partitions"][0]
print(",".join(map(str, p["replicas"])), ",".join(map(str, sorted(p["isr"]))), p["leader"])'
}

# counts NODE: the message count of each partition of r in NODE's log, "c0 c1 c2"
counts() {
	ctl "n$1" topic info r | python3 -c '
import json, sys
print(" ".join(str(p["message_count"]) for p in json.load(sys.stdin)["partition_info"]))'
}

need_nsqjs
make_bridge
cat > "$TMP/cluster.conf" <<-CONF
node 1 $SUBNET.11
node 2 $SUBNET.12
node 3 $SUBNET.13
partition r 0 replicas=1,2,3 leader=1 isr=1,2,3
partition r 1 replicas=1,2,3 leader=2 isr=1,2,3
partition r 2 replicas=1,2,3 leader=3 isr=1,2,3
CONF
for id in 1 2 3; do
	boot "$id" --log-mb 8
done
for p in 0 1 2; do
	for i in $(seq 300); do
		got=$(part_show $((p + 1)) $p)
		[ "$got" = "1,2,3 1,2,3 $((p + 1))" ] && break
		sleep 0.1
	done
	[ "$got" = "1,2,3 1,2,3 $((p + 1))" ] ||
		fail "partition $p: replicas, ISR, leader $got in its leader's view"
	log "partition r $p: replicas, ISR, leader $got"
done

log "sluice-nsqd --sluice $SUBNET.12,$SUBNET.11,$SUBNET.13"
start_gw "$SUBNET.12,$SUBNET.11,$SUBNET.13" ""

# nsqd's /channel/create makes the durable channel on every partition, at its leader
st=$(ip netns exec "$NS" curl -s -o /dev/null -w '%{http_code}' -X POST \
	"http://$NSQD_HTTP/channel/create?topic=r&channel=made")
[ "$st" = 200 ] || fail "/channel/create answered $st"
for p in 0 1 2; do
	ctl "n$((p + 1))" topic info r | python3 -c '
import json, sys
p = json.load(sys.stdin)["partition_info"][int(sys.argv[1])]
sys.exit(0 if any(c["name"] == "made" for c in p.get("channels", [])) else 1)' "$p" ||
		fail "/channel/create: no channel made on partition $p at its leader"
done
log "/channel/create made the channel on each partition's leader"

: > "$TMP/acked.txt"
log "nsqjs $NSQJS_VERSION: a Reader and a Writer, $N messages$([ "$FAILOVER" = 1 ] &&
	echo ", leader of partition 0 killed half way")"
STRICT=1
PACE_MS=0
if [ "$FAILOVER" = 1 ]; then
	STRICT=0
	PACE_MS=50	# the second half paced: the kill meets publishes in flight
fi
ip netns exec "$NS" node "$(dirname "$0")/nsqjs_parts.js" "$NSQJS_CACHE/node_modules" \
	"$NSQD_TCP" "$NSQD_HTTP" r "$N" "$TMP/acked.txt" "$STRICT" "$PACE_MS" \
	> "$TMP/nsqjs.log" 2>&1 &
JS_PID=$!
PIDS+=("$JS_PID")

if [ "$FAILOVER" = 1 ]; then
	for i in $(seq 1200); do
		[ "$(wc -l < "$TMP/acked.txt")" -ge $HALF ] && break
		kill -0 "$JS_PID" 2> /dev/null || break
		sleep 0.1
	done
	[ "$(wc -l < "$TMP/acked.txt")" -ge $HALF ] ||
		fail "the first $HALF not acknowledged: $(tail -5 "$TMP/nsqjs.log")"
	log "node 1 (leader of partition 0) SIGKILLed at $(wc -l < "$TMP/acked.txt") \
acknowledged; node 2 leads partition 0"
	kill -KILL "${NODE_PID[1]}"
	for id in 3 2; do
		ctl "n$id" partition set r 0 leader=2 isr=2,3 epoch=2 session=2 \
			> "$TMP/set$id.json" ||
			fail "partition set on node $id: $(cat "$TMP/set$id.json")"
	done
fi

wait "$JS_PID" || fail "nsqjs: $(tail -20 "$TMP/nsqjs.log")"
grep "^nsqjs_parts:" "$TMP/nsqjs.log" | tail -4
[ "$(sort -u "$TMP/acked.txt" | wc -l)" = "$N" ] || fail "not all $N acknowledged"

# the publishes were spread: every partition holds messages, on its leader
L0=1
[ "$FAILOVER" = 1 ] && L0=2
read -r c0 x y <<< "$(counts $L0)"
read -r x c1 y <<< "$(counts 2)"
read -r x y c2 <<< "$(counts 3)"
log "messages per partition on its leader: $c0 $c1 $c2 (total $((c0 + c1 + c2)), $N published)"
[ "$c0" -gt 0 ] && [ "$c1" -gt 0 ] && [ "$c2" -gt 0 ] ||
	fail "a partition got no message: $c0 $c1 $c2"
[ $((c0 + c1 + c2)) -ge "$N" ] || fail "the partitions hold fewer than the $N published"
if [ "$FAILOVER" != 1 ]; then
	[ $((c0 + c1 + c2)) = "$N" ] || fail "$((c0 + c1 + c2)) messages stored for $N published"
fi

ip netns exec "$NS" curl -s "http://$NSQD_HTTP/metrics" > "$TMP/metrics.txt" || fail "/metrics"
grep '^sluice_nsqd_sluice_leader_switches_total' "$TMP/metrics.txt"
if [ "$FAILOVER" = 1 ]; then
	sw=$(awk '/^sluice_nsqd_sluice_leader_switches_total{node="partitions"}/ {print $2}' \
		"$TMP/metrics.txt")
	[ "${sw:-0}" -ge 1 ] || fail "no partition session followed the new leader"
fi
stop_pid "$GW_PID" || fail "sluice-nsqd exited with $? on SIGTERM"
log "PASS"
