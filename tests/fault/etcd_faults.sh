#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# etcd faults (issue 13, point 8) on three sluiced nodes joined through one etcd
# (--etcd, docs/cluster.md), each node reaching etcd through a relay of its own
# (etcd_proxy.py) that can cut it off. Topic r, 1 partition, 3 replicas.
#  A. etcd SIGKILLed under load: every node says etcd is unreachable (status), the leader
#     keeps taking writes past the lease TTL (etcd is down for everyone: nobody can fail
#     over), no failover; etcd restarted on the same data: every node reachable again,
#     leases renewed, same epoch, writes go on.
#  B. The controller SIGKILLed: another node takes over (cluster show); the killed node
#     restarts and rejoins; then the leader is SIGKILLed and the new controller fails it
#     over; writes resume on the new leader.
#  C. The leader cut off from etcd (its relay drops everything, calls time out): it
#     fences itself (status fenced, partition show writes off) within the lease TTL, a new
#     leader is elected elsewhere and takes writes; healed, the old leader registers again,
#     follows and is back in the ISR with no command.
# Every acknowledged message of every phase is in the last leader's log, once, in the
# order each publisher sent it. Skipped (77) without etcd-server.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/etcd_lib.sh"
skip_without_etcd

NS=sl-etcdf-$$
SUBNET=10.88.$(( $$ % 200 ))
PROXY=$(dirname "$0")/etcd_proxy.py
TTL_MS=2000
ETCD_PREFIX=/sluice/f$$
. "$(dirname "$0")/../integration/cluster.sh"
make_bridge

# etcd on fixed ports (chosen once) so that a restart serves the same URL
CPORT=$(in_ns "$NS" python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
PPORT=$(in_ns "$NS" python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
etcd_data_dir f
etcd_up() {
	local i
	# a plain command in the background (not the in_ns function), so $! is etcd itself
	ip netns exec "$NS" "$ETCD" --name f --data-dir "$ETCD_DATA" \
		--listen-client-urls "http://127.0.0.1:$CPORT" \
		--advertise-client-urls "http://127.0.0.1:$CPORT" \
		--listen-peer-urls "http://127.0.0.1:$PPORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$PPORT" \
		--initial-cluster "f=http://127.0.0.1:$PPORT" \
		--listen-metrics-urls "" >> "$TMP/etcd.log" 2>&1 &
	ETCD_PID=$!
	PIDS+=("$ETCD_PID")
	for i in $(seq 200); do
		in_ns "$NS" curl -s -m 1 "http://127.0.0.1:$CPORT/health" 2>/dev/null |
			grep -q '"true"' && return 0
		sleep 0.05
	done
	fail "etcd not healthy after 10 s"
}
etcd_up

declare -A PROXY_PID PROXY_PORT
for id in 1 2 3; do
	PROXY_PORT[$id]=$(in_ns "$NS" python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	ip netns exec "$NS" python3 "$PROXY" "${PROXY_PORT[$id]}" 127.0.0.1 "$CPORT" "$TMP/proxy$id.pid" \
		> "$TMP/proxy$id.log" 2>&1 &
	PROXY_PID[$id]=$!
	PIDS+=("${PROXY_PID[$id]}")
	for i in $(seq 100); do
		[ -s "$TMP/proxy$id.pid" ] && break
		sleep 0.05
	done
done

# node ID reaches etcd through its relay
boot_relayed() { boot_etcd "$1" "http://127.0.0.1:${PROXY_PORT[$1]}"; }

# jq-like reads of the control socket's JSON: jget NODE EXPR CMD... (EXPR on `j`)
jget() {
	local n=$1 e=$2
	shift 2
	ctl "n$n" "$@" 2> /dev/null | python3 -c '
import json, sys
try:
    j = json.load(sys.stdin)
    print(eval(sys.argv[1]))
except Exception:
    print("")' "$e"
}
wait_for() {	# wait_for SECONDS WHAT CMD...: until CMD succeeds
	local limit=$1 what=$2 i
	shift 2
	for i in $(seq $((limit * 20))); do
		"$@" && return 0
		sleep 0.05
	done
	fail "not within $limit s: $what"
}
view_is() { [[ "$(view_of "$1")" =~ $2 ]]; }
status_is() { [ "$(jget "$1" "$2" status)" = "$3" ]; }	# status_is NODE EXPR VALUE
acked() { wc -l < "$1"; }
alive() { kill -0 "${NODE_PID[$1]}" 2> /dev/null; }

for id in 1 2 3; do
	boot_relayed $id
done
ctl n1 topic create r 1 --replicas 3 > "$TMP/create.json" ||
	fail "topic create: $(cat "$TMP/create.json")"
for id in 1 2 3; do
	wait_for 30 "node $id has the view" view_is $id '^[123] 1 1,2,3$'
done
read -r L _ <<< "$(view_of 1)"
log "three nodes, topic r placed, leader $L"

# publisher P: lines "P N" for N = 1.., their line numbers logged to $TMP/P.acked as acked
start_pub() {	# start_pub NAME NODE: in the background, PUB_PID (sluice-pub's)
	: > "$TMP/$1.acked"
	# 1,000 lines a second, one request in flight (-w 1: a pipelined window may reorder
	# retried publishes today, which is not what this test is about)
	python3 -c '
import sys, time
t = time.monotonic()
for i in range(1, 400001):
    print("%s %d" % (sys.argv[1], i), flush=(i % 20 == 0))
    if i % 20 == 0:
        t += 0.02
        time.sleep(max(0.0, t - time.monotonic()))' "$1" 2> /dev/null |
		ip netns exec "$NS" "$PUB" -a "$SUBNET.1$2" -A "$TMP/$1.acked" -w 1 r \
		> /dev/null 2> "$TMP/$1.pub.log" &
	PUB_PID=$!
	PIDS+=("$PUB_PID")
}
acks_over() { [ "$(acked "$1")" -ge "$2" ]; }
stop_pub() { kill -TERM "$1" 2> /dev/null; wait "$1" 2> /dev/null; }

log "phase A: etcd SIGKILLed under load"
start_pub a "$L"
wait_for 30 "500 acknowledged by leader $L" acks_over "$TMP/a.acked" 500
kill -KILL "$ETCD_PID"
wait "$ETCD_PID" 2> /dev/null
T0=$(date +%s%N)
for id in 1 2 3; do
	wait_for 5 "node $id says etcd is unreachable" \
		status_is $id 'j["cluster"]["etcd_reachable"]' False
done
n0=$(acked "$TMP/a.acked")
# past the lease TTL with etcd down: the leader must still take writes (no one can fail over)
renewed_past() { [ "$(jget "$L" 'j["cluster"]["lease_renewed_ms_ago"]' status)" -gt $1 ]; }
wait_for 10 "the leader's lease unrenewed past the TTL" renewed_past $((TTL_MS + 500))
n1=$(acked "$TMP/a.acked")
kill -0 "$PUB_PID" 2> /dev/null || fail "publisher A stopped: $(cat "$TMP/a.pub.log")"
[ "$n1" -gt "$n0" ] || fail "no write acknowledged while etcd was down ($n0 -> $n1)"
[ "$(jget "$L" 'j["cluster"]["fenced"]' status)" = False ] || fail "leader $L fenced itself"
log "etcd down $(( ($(date +%s%N) - T0) / 1000000 )) ms: $((n1 - n0)) writes acknowledged" \
    "meanwhile, every node says etcd is unreachable, the leader is not fenced"
etcd_up
for id in 1 2 3; do
	wait_for 15 "node $id reaches etcd again" \
		status_is $id 'j["cluster"]["etcd_reachable"]' True
	wait_for 10 "node $id renews its lease" \
		status_is $id 'int(j["cluster"]["lease_renewed_ms_ago"] < 1000)' 1
done
for id in 1 2 3; do
	view_is $id "^$L 1 1,2,3\$" || fail "node $id: view $(view_of $id) after etcd came back"
done
n2=$(acked "$TMP/a.acked")
wait_for 10 "writes after etcd returned" acks_over "$TMP/a.acked" $((n2 + 200))
stop_pub "$PUB_PID"
log "etcd back: every node renewed its lease, no failover (epoch 1), writes go on"

log "phase B: the controller SIGKILLed"
C=$(jget 1 'j["cluster"]["controller"]' status)
[ -n "$C" ] && [ "$C" != None ] || fail "no controller known"
kill -KILL "${NODE_PID[$C]}"
wait "${NODE_PID[$C]}" 2> /dev/null
S=$(( C % 3 + 1 ))
new_controller() {
	local c
	c=$(jget $S 'j["cluster"]["controller"]' status)
	[ -n "$c" ] && [ "$c" != None ] && [ "$c" != "$C" ]
}
wait_for 10 "another controller than node $C" new_controller
C2=$(jget $S 'j["cluster"]["controller"]' status)
log "controller $C killed: node $C2 controls"
led_by_other() { local v; v=$(view_of $S); [ -n "$v" ] && [ "${v%% *}" != "$C" ]; }
wait_for 15 "a leader other than node $C (it may have led too)" led_by_other
read -r L E _ <<< "$(view_of $S)"
boot_relayed "$C"
wait_for 30 "node $C back in the ISR" view_is "$L" "^$L $E 1,2,3\$"
start_pub b "$L"
wait_for 30 "300 acknowledged by leader $L" acks_over "$TMP/b.acked" 300
kill -KILL "${NODE_PID[$L]}"
wait "${NODE_PID[$L]}" 2> /dev/null
stop_pub "$PUB_PID"
S=$(( L % 3 + 1 ))
wait_for 15 "failover of leader $L by controller $C2" view_is $S "^[123] $((E + 1)) "
read -r NL E2 _ <<< "$(view_of $S)"
[ "$NL" != "$L" ] || fail "the dead node $L still leads"
start_pub c "$NL"
wait_for 30 "writes on the new leader $NL" acks_over "$TMP/c.acked" 300
stop_pub "$PUB_PID"
boot_relayed "$L"
wait_for 30 "node $L back in the ISR" view_is "$NL" "^$NL $E2 1,2,3\$"
log "leader $L killed after the controller change: node $NL leads (epoch $E2), writes" \
    "resume, node $L rejoined the ISR"

log "phase C: leader $NL cut off from etcd"
L=$NL
start_pub d "$L"
wait_for 30 "300 acknowledged by leader $L" acks_over "$TMP/d.acked" 300
kill -USR1 "${PROXY_PID[$L]}"
T0=$(date +%s%N)
fenced() { [ "$(jget "$L" 'j["cluster"]["fenced"]' status)" = True ]; }
wait_for 5 "leader $L fences itself" fenced	# (bounded by iterations: status calls are slow)
FENCE_MS=$(( ($(date +%s%N) - T0) / 1000000 ))
[ "$(jget "$L" 'j["partitions"][0]["writes_enabled"]' partition show r 0)" = False ] ||
	fail "leader $L still has writes on"
n0=$(acked "$TMP/d.acked")
# the node's own measure: how old its last renewal was when it fenced (etcd counts the
# TTL from when it received that renewal, later); the test's own view adds its polling
AGE_MS=$(jget "$L" 'j["cluster"]["last_fence_after_ms"]' status)
[ -n "$AGE_MS" ] && [ "$AGE_MS" -lt $TTL_MS ] ||
	fail "fenced $AGE_MS ms after its last renewal (lease TTL $TTL_MS ms)"
S=$(( L % 3 + 1 ))
wait_for 15 "a new leader elsewhere" view_is $S "^[123] $((E2 + 1)) "
read -r NL E3 _ <<< "$(view_of $S)"
[ "$NL" != "$L" ] || fail "the cut-off node $L leads again"
n1=$(acked "$TMP/d.acked")
stop_pub "$PUB_PID"
[ "$n1" = "$n0" ] || fail "leader $L acknowledged $((n1 - n0)) writes after it fenced itself"
log "cut off: leader $L fenced $AGE_MS ms after its last renewal (< TTL $TTL_MS ms; seen" \
    "here $FENCE_MS ms after the cut), no write acknowledged after; node $NL leads (epoch $E3)"
start_pub e "$NL"
wait_for 30 "writes on the new leader $NL" acks_over "$TMP/e.acked" 300
kill -USR2 "${PROXY_PID[$L]}"
wait_for 30 "node $L back in the ISR" view_is "$NL" "^$NL $E3 1,2,3\$"
wait_for 30 "more writes" acks_over "$TMP/e.acked" $(( $(acked "$TMP/e.acked") + 300 ))
stop_pub "$PUB_PID"
view_is "$L" "^$NL $E3 " || fail "node $L's view: $(view_of "$L")"
log "healed: node $L registered again, follows $NL, back in the ISR with no command"

log "every acknowledged message in the last leader's log"
total=0
for p in a b c d e; do
	total=$((total + $(acked "$TMP/$p.acked")))
done
in_ns "$NS" "$SUB" -a "$SUBNET.1$NL" -c check -t 5 --from-start r > "$TMP/out.txt" \
	2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
python3 - "$TMP" <<'PY' || fail "the last leader's log"
import collections, sys
d = sys.argv[1]
got = open(d + "/out.txt").read().split("\n")[:-1]
dup = [m for m, n in collections.Counter(got).items() if n > 1]
assert not dup, "%d messages twice, e.g. %s" % (len(dup), dup[:3])
for p in "abcde":
    acked = {int(x) for x in open("%s/%s.acked" % (d, p)).read().split()}
    mine = [int(m.split()[1]) for m in got if m.split()[0] == p]
    missing = acked - set(mine)
    assert not missing, "publisher %s: %d acknowledged missing, e.g. %s" % (
        p, len(missing), sorted(missing)[:3])
    assert mine == sorted(mine), "publisher %s: out of order" % p
    print("publisher %s: %d acknowledged, %d in the log, in order" % (p, len(acked), len(mine)))
PY
log "all $total acknowledged messages present, once, in each publisher's order"
log "PASS"
