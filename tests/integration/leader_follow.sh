#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Leader discovery (docs/protocol.md, METADATA; "Following the leader"): a three-node static
# cluster (cluster.sh), topic `r` led by node 1. sluice-pub is given the three nodes with a
# follower first (-a node2,node1,node3): its first publish is refused NOT_LEADER, it asks
# with METADATA and moves to node 1. Half way, leadership moves to node 2 with `sluicectl
# partition set` on every node (the old leader first) while the publisher is sending; it
# follows again. Every acknowledged line must be in node 2's log in publishing order, and
# none twice: a publish the old leader committed whose answer did not reach sluice-pub is
# sent again to node 2 with the same producer id and seq, and node 2 answers it from the
# producer table that replication filled (docs/protocol.md section 8, rule 11).
. "$(dirname "$0")/lib.sh"

NS=sl-lead-$$
SUBNET=10.86.$(( $$ % 200 ))
HALF=3000
N=6000

. "$(dirname "$0")/cluster.sh"

make_bridge
for id in 1 2 3; do
	boot $id
done

log "METADATA through a follower names the leader"
echo warm | in_ns "$NS" "$PUB" -a "$SUBNET.12,$SUBNET.11" r 2> "$TMP/warm.log" ||
	fail "warm-up publish through a follower: $(cat "$TMP/warm.log")"
grep -q "1 leader switch" "$TMP/warm.log" || fail "no leader switch: $(cat "$TMP/warm.log")"

log "publishing $N lines from a follower-first list; leadership moves after $HALF"
mkfifo "$TMP/gate"
seq -f "line %06g" 1 $N > "$TMP/in.txt"
: > "$TMP/acked.txt"
( head -n $HALF "$TMP/in.txt"; cat "$TMP/gate" > /dev/null; tail -n +$((HALF + 1)) "$TMP/in.txt" ) |
	in_ns "$NS" "$PUB" -a "$SUBNET.12,$SUBNET.11,$SUBNET.13" -w 2 -A "$TMP/acked.txt" r \
	> /dev/null 2> "$TMP/pub.log" &
PUBPID=$!
PIDS+=("$PUBPID")
for i in $(seq 600); do
	[ "$(wc -l < "$TMP/acked.txt")" -ge $HALF ] && break
	kill -0 "$PUBPID" 2> /dev/null || fail "sluice-pub ended early: $(cat "$TMP/pub.log")"
	sleep 0.1
done
[ "$(wc -l < "$TMP/acked.txt")" -ge $HALF ] || fail "the first $HALF lines not acknowledged"
# the rest of the input goes out while the views change
echo go > "$TMP/gate"
for id in 1 3 2; do
	ctl "n$id" partition set r 0 leader=2 isr=1,2,3 epoch=2 session=2 > "$TMP/set$id.json" ||
		fail "partition set on node $id: $(cat "$TMP/set$id.json")"
done
moved_at=$(wc -l < "$TMP/acked.txt")
log "leadership moved to node 2 at $moved_at acknowledged"
wait "$PUBPID" || fail "sluice-pub failed: $(cat "$TMP/pub.log")"
cat "$TMP/pub.log"
grep -q "leader switch" "$TMP/pub.log" || fail "sluice-pub did not switch: $(cat "$TMP/pub.log")"
[ "$(wc -l < "$TMP/acked.txt")" = $N ] || fail "$(wc -l < "$TMP/acked.txt") of $N acknowledged"

log "node 2's log holds every acknowledged line, in order"
c2=$(count_of 2)
in_ns "$NS" "$SUB" -a "$SUBNET.12" -c check -n "$c2" -t 30 --from-start r \
	> "$TMP/out.txt" 2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
python3 - "$TMP/out.txt" "$TMP/in.txt" "$TMP/acked.txt" <<'PY' || fail "node 2's log"
import sys
got = [l for l in open(sys.argv[1]).read().split("\n")[:-1] if l != "warm"]
sent = open(sys.argv[2]).read().split("\n")[:-1]
acked = [sent[int(x) - 1] for x in open(sys.argv[3]).read().split()]
first, dups = {}, 0
for i, l in enumerate(got):
    if l in first:
        dups += 1
    else:
        first[l] = i
missing = [l for l in acked if l not in first]
assert not missing, "%d acknowledged lines missing, e.g. %s" % (len(missing), missing[:3])
order = [first[l] for l in sent if l in first]
bad = sum(1 for a, b in zip(order, order[1:]) if b < a)
assert bad == 0, "%d lines out of order" % bad
print("[leader_follow] %d lines in node 2's log, %d acknowledged, %d written twice across a "
      "switch" % (len(got), len(acked), dups))
assert dups == 0, "%d lines written twice across the leader switch" % dups
PY
log "PASS"
