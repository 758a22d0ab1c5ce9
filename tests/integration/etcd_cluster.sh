#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A three-node cluster with no cluster file: the nodes join through one etcd
# (sluiced --etcd, the etcd membership backend, docs/cluster.md). The nodes' net_tap ports
# are on one bridge inside a namespace this test creates (cluster.sh); etcd listens on the
# namespace's loopback.
#  1. `sluicectl topic create r 1 --replicas 3` on node 2: the controller places the
#     partition on the three nodes and every node installs the view by watch.
#  2. Messages are published to the leader (acknowledgements logged); the leader is
#     SIGKILLed. Its lease ends, the controller makes a live ISR member leader (epoch 2),
#     the survivors install it; publishes resume on the new leader.
#  3. Every acknowledged message is in the new leader's log, once, in order.
# Skipped (77) without etcd-server.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd_lib.sh"
skip_without_etcd

NS=sl-etcd-$$
SUBNET=10.85.$(( $$ % 200 ))
N1=2000
N2=500
. "$(dirname "$0")/cluster.sh"
make_bridge
start_etcd e1 "$NS"
log "etcd at $ETCD_URL (in $NS)"

for id in 1 2 3; do
	boot_etcd $id
done
log "phase 1: topic r (1 partition, 3 replicas) created on node 2"
ctl n2 topic create r 1 --replicas 3 > "$TMP/create.json" ||
	fail "topic create: $(cat "$TMP/create.json")"
for id in 1 2 3; do
	wait_view $id '^[123] 1 1,2,3$'
done
read -r L _ <<< "$(view_of 1)"
log "every node has the view: leader $L, epoch 1, ISR 1,2,3"

log "phase 2: $N1 messages to leader $L, which is then SIGKILLed"
seq -f "before %06g" 1 $N1 > "$TMP/in1.txt"
publish_until "$NS" "$SUBNET.1$L" r "$TMP/in1.txt" "$TMP/acked1.txt" $N1
wait "$PUBPID" || fail "sluice-pub: $(cat "$TMP/acked1.txt.log")"
kill -KILL "${NODE_PID[$L]}"
wait "${NODE_PID[$L]}" 2>/dev/null
S=$(( L % 3 + 1 ))
wait_view $S "^[123] 2 "
read -r NL E ISR <<< "$(view_of $S)"
[ "$NL" != "$L" ] || fail "the dead node $L still leads"
for id in 1 2 3; do
	[ "$id" = "$L" ] && continue
	wait_view $id "^$NL 2 $ISR\$"
done
log "leader $L gone: node $NL leads with epoch 2, ISR $ISR, on both survivors"
seq -f "after %06g" 1 $N2 > "$TMP/in2.txt"
in_ns "$NS" "$PUB" -a "$SUBNET.1$NL" -A "$TMP/acked2.txt" r < "$TMP/in2.txt" \
	> /dev/null 2> "$TMP/pub2.log" || fail "publish to the new leader: $(cat "$TMP/pub2.log")"
[ "$(wc -l < "$TMP/acked2.txt")" = $N2 ] || fail "not all $N2 acknowledged by node $NL"
log "writes resume on node $NL: $N2 acknowledged"

log "phase 3: every acknowledged message in the new leader's log"
in_ns "$NS" "$SUB" -a "$SUBNET.1$NL" -c check -n $((N1 + N2)) -t 10 --from-start r \
	> "$TMP/out.txt" 2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
cat "$TMP/in1.txt" "$TMP/in2.txt" > "$TMP/in.txt"
python3 - "$TMP/out.txt" "$TMP/in.txt" <<'PY' || fail "the new leader's log"
import collections, sys
got = open(sys.argv[1]).read().split("\n")[:-1]
sent = open(sys.argv[2]).read().split("\n")[:-1]
dup = [m for m, n in collections.Counter(got).items() if n > 1]
missing = set(sent) - set(got)
assert not missing, "%d acknowledged messages missing, e.g. %s" % (len(missing), sorted(missing)[:3])
assert not dup, "%d messages twice, e.g. %s" % (len(dup), dup[:3])
assert got == sent, "out of order"
PY
log "all $((N1 + N2)) acknowledged messages present, once, in order"
log "PASS"
