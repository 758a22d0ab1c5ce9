#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# sluice-nsqd in front of a replicated topic on a three-node static cluster (cluster.sh:
# topic `r`, one partition, replicas 1,2,3, leader 1), the nodes given follower first
# (--sluice node2,node1,node3): the gateway finds the leader itself. An NSQ consumer
# (channel c1) and an NSQ producer (PUB, 8 in flight) run through the gateway while the
# leader is killed (SIGKILL) half way and node 2 made leader by `sluicectl partition set`,
# as a controller would. The producer sees at most failed PUBs (E_PUB_FAILED, then it
# publishes them again); every message the gateway acknowledged must reach the consumer.
# The gateway's /metrics is scraped during the run and must show the leader switch. Then
# an NSQ MPUB of 32 x 32 bytes to r leaves as two sluice MPUBs within the replica record.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsq_lib.sh"

NS=sl-nsqc-$$
SUBNET=10.87.$(( $$ % 200 ))
N=${NSQ_CLUSTER_N:-4000}
HALF=$((N / 2))
PY="$(dirname "$0")/nsq_failover.py"
GW_TCP=$NSQD_TCP
GW_HTTP=$NSQD_HTTP

. "$(dirname "$0")/cluster.sh"

start_cluster

log "sluice-nsqd --sluice $SUBNET.12,$SUBNET.11,$SUBNET.13 (a follower first)"
start_gw "$SUBNET.12,$SUBNET.11,$SUBNET.13" ""

: > "$TMP/acked.txt"
: > "$TMP/got.txt"
ip netns exec "$NS" python3 "$PY" consume "$GW_TCP" r c1 "$TMP/got.txt" 2> "$TMP/cons.log" &
CONS_PID=$!
PIDS+=("$CONS_PID")
# the consumer's SUB is in place before the first publish (a new NSQ channel starts at
# the messages published after it)
for i in $(seq 300); do
	ip netns exec "$NS" curl -s "http://$GW_HTTP/stats?format=json&topic=r" |
		grep -q '"client_count":1' && break
	sleep 0.1
done
log "publishing $N messages through the gateway"
ip netns exec "$NS" python3 "$PY" produce "$GW_TCP" r "$N" "$TMP/acked.txt" \
	2> "$TMP/prod.log" &
PROD_PID=$!
PIDS+=("$PROD_PID")
for i in $(seq 1200); do
	[ "$(wc -l < "$TMP/acked.txt")" -ge $HALF ] && break
	kill -0 "$PROD_PID" 2> /dev/null || fail "producer ended early: $(cat "$TMP/prod.log")"
	sleep 0.1
done
[ "$(wc -l < "$TMP/acked.txt")" -ge $HALF ] || fail "the first $HALF not acknowledged"

log "leader (node 1) killed at $(wc -l < "$TMP/acked.txt") acknowledged; node 2 leads"
kill -KILL "${NODE_PID[1]}"
for id in 3 2; do
	ctl "n$id" partition set r 0 leader=2 isr=2,3 epoch=2 session=2 > "$TMP/set$id.json" ||
		fail "partition set on node $id: $(cat "$TMP/set$id.json")"
done
ip netns exec "$NS" curl -s "http://$GW_HTTP/metrics" > "$TMP/metrics-during.txt" ||
	fail "/metrics during the run"
wait "$PROD_PID" || fail "producer: $(tail -5 "$TMP/prod.log")"
log "all $N acknowledged ($(grep -c reconnecting "$TMP/prod.log") producer reconnects)"

log "every acknowledged message reaches the consumer"
for i in $(seq 600); do
	missing=$(python3 - "$TMP/acked.txt" "$TMP/got.txt" <<'PY'
import sys
got = set(open(sys.argv[2]).read().split())
acked = set("m%06d" % int(x) for x in open(sys.argv[1]).read().split())
print(len(acked - got))
PY
)
	[ "$missing" = 0 ] && break
	kill -0 "$CONS_PID" 2> /dev/null || fail "consumer ended: $(cat "$TMP/cons.log")"
	sleep 0.1
done
[ "$missing" = 0 ] || fail "$missing acknowledged messages never consumed"
log "consumed $(sort -u "$TMP/got.txt" | wc -l) distinct, $(wc -l < "$TMP/got.txt") deliveries"

ip netns exec "$NS" curl -s "http://$GW_HTTP/metrics" > "$TMP/metrics.txt" || fail "/metrics"
grep -q '^sluice_nsqd_messages_published_total{topic="r"}' "$TMP/metrics.txt" ||
	fail "no published_total for r: $(grep published_total "$TMP/metrics.txt")"
sw=$(awk '/^sluice_nsqd_sluice_leader_switches_total/ {s += $2} END {print s + 0}' \
	"$TMP/metrics.txt")
[ "$sw" -ge 2 ] || fail "sluice_nsqd_sluice_leader_switches_total $sw: the gateway did not \
follow (start at a follower, then the failover)"
log "/metrics: $sw leader switches"
if command -v promtool > /dev/null; then
	for f in metrics-during metrics; do
		promtool check metrics < "$TMP/$f.txt" > "$TMP/promtool.log" 2>&1 ||
			fail "promtool check metrics ($f): $(cat "$TMP/promtool.log")"
	done
else
	log "SKIP promtool check: promtool not installed (Debian package prometheus)"
fi
# META v2's max_record (1228 on this MTU): the replicated topic's MPUB of 32 x 32 bytes
# (2048 bytes of record) leaves as two sluice MPUBs, 19 + 13, both accepted
n=$(mpub32_requests r)
[ "$n" = 2 ] || fail "an MPUB of 32 x 32 bytes to the replicated topic: $n sluice requests, \
not 2"
log "MPUB of 32 x 32 bytes to the replicated topic: two sluice MPUBs, accepted"
stop_pid "$GW_PID" || fail "sluice-nsqd exited with $? on SIGTERM"
log "PASS"
