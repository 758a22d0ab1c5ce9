#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# sluice-nsqd keeps serving while a partition it publishes to has no leader. Three-node
# static cluster (cluster.sh: topic `r`, one partition, replicas 1,2,3, leader 1), the
# gateway given every node. A PUB to r goes through; the leader is killed (SIGKILL) and no
# node is made leader, so the gateway's partition session searches for one (METADATA
# rounds) while an HTTP /pub to r waits. Meanwhile the gateway must answer /ping: at least
# 16 of 20 in turn, each given 1.5 s. libsluice's leader search used to loop until the
# request timeout (5 s), holding the gateway's whole event loop, again and again while no
# leader was elected (0 of 20 pings answered, new code 20 of 20). Then node 2 is made leader
# (`sluicectl partition set`, as a controller would) and a PUB to r must go through again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsq_lib.sh"

NS=sl-nsql-$$
SUBNET=10.89.$(( $$ % 200 ))
GW_HTTP=$NSQD_HTTP

. "$(dirname "$0")/cluster.sh"

start_cluster

log "sluice-nsqd --sluice $SUBNET.11,$SUBNET.12,$SUBNET.13"
start_gw "$SUBNET.11,$SUBNET.12,$SUBNET.13" ""
pub() {	# pub MAX_TIME BODY: HTTP /pub to r through the gateway; prints the answer
	ip netns exec "$NS" curl -s --max-time "$1" -d "$2" "http://$GW_HTTP/pub?topic=r"
}
[ "$(pub 10 first)" = OK ] || fail "a PUB to r through the gateway"

log "leader (node 1) killed; no node leads r 0"
kill -KILL "${NODE_PID[1]}"
pub 30 second > "$TMP/pub2.txt" &
PUB_PID=$!
PIDS+=("$PUB_PID")
# the partition session notices the silence after failover_ms (2 s), then searches
sleep 3
ok=0
for i in $(seq 20); do
	ip netns exec "$NS" curl -s --max-time 1.5 "http://$GW_HTTP/ping" | grep -q OK &&
		ok=$((ok + 1))
	sleep 0.1
done
log "/ping answered $ok of 20 times while r 0 had no leader"
[ "$ok" -ge 16 ] || fail "the gateway answered /ping $ok of 20 times while a partition \
had no leader (its event loop was held by the leader search)"

log "node 2 made leader"
for id in 3 2; do
	ctl "n$id" partition set r 0 leader=2 isr=2,3 epoch=2 session=2 > "$TMP/set$id.json" ||
		fail "partition set on node $id: $(cat "$TMP/set$id.json")"
done
for i in $(seq 60); do
	[ "$(pub 5 third)" = OK ] && break
	sleep 0.5
done
[ "$(pub 10 fourth)" = OK ] || fail "no PUB to r through the gateway after node 2 leads"
wait "$PUB_PID"
log "the PUB made while r 0 had no leader answered: $(cat "$TMP/pub2.txt")"
stop_pid "$GW_PID" || fail "sluice-nsqd exited with $? on SIGTERM"
log "PASS"
