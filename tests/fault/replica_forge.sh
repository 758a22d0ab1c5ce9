#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Hostile replica traffic: three nodes with a cluster key (tests/integration/cluster.sh)
# and an attacker on the replica network, on the kernel side of follower 2's tap
# (tests/fault/replica_forge.py). It captures one genuine WRITE from the leader, then sends
# a replay of it, a copy with one byte changed, a WRITE with a huge write epoch in the old
# untagged envelope, in the version-2 one (BLAKE2b tag), and in the current one with a
# made-up tag and with none, and the genuine datagram from an address that is not a member.
# Asserted: every forgery is refused and counted under its cause on node 2 (stats workers:
# repl_rejected_*), and nothing changes for the cluster: 300 more publishes are all
# acknowledged, node 2 holds every message the leader holds, and the ISR stays {1,2,3}.
# Before replica authentication the huge-epoch WRITE was applied and node 2 dropped every
# real WRITE after it (it never caught up again: this test timed out waiting).
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-forge-$$
SUBNET=10.86.$(( $$ % 200 ))
FORGE=$(dirname "$0")/replica_forge.py

. "$(dirname "$(readlink -f "$0")")/../integration/cluster.sh"

make_bridge
for id in 1 2 3; do
	boot $id
done
wait_isr 1,2,3

rejected() {	# rejected NODE CAUSE: the sum over NODE's workers of repl_rejected_CAUSE
	ctl "n$1" stats workers | python3 -c '
import json, sys
print(sum(w["repl_rejected_" + sys.argv[1]] for w in json.load(sys.stdin)["workers"]))' "$2"
}

log "capture a genuine WRITE from the leader to node 2 while publishing"
IF2=slr2$$
IF2=${IF2:0:15}
in_ns "$NS" python3 "$FORGE" capture "$IF2" "$SUBNET.11" "$TMP/frame.hex" \
	> "$TMP/capture.log" 2>&1 &
CAP=$!
PIDS+=("$CAP")
for i in $(seq 100); do
	grep -q listening "$TMP/capture.log" 2> /dev/null && break
	sleep 0.05
done
seq -f "before %g" 1 2000 > "$TMP/in1.txt"
publish_until "$NS" "$SUBNET.11" r "$TMP/in1.txt" "$TMP/acked1.txt" 2000
wait "$CAP" || fail "capture: $(cat "$TMP/capture.log")"
for c in malformed not_member bad_mac replay; do
	[ "$(rejected 2 $c)" = 0 ] || fail "node 2 refused genuine traffic ($c)"
done

log "attack node 2: replay, bit flip, huge write epoch (v1, v2, v3 with a bad tag, no tag), non-member"
in_ns "$NS" python3 "$FORGE" attack "$IF2" "$TMP/frame.hex" "$SUBNET.1" > "$TMP/attack.log" 2>&1 ||
	fail "attack: $(cat "$TMP/attack.log")"
[ "$(wc -l < "$TMP/attack.log")" = 7 ] || fail "attack sent: $(cat "$TMP/attack.log")"

# every forgery counted under its cause (counters refresh on each worker's tick)
want() {	# want CAUSE N
	local i got
	for i in $(seq 100); do
		got=$(rejected 2 "$1")
		[ "$got" -ge "$2" ] && { log "  repl_rejected_$1 = $got"; return 0; }
		sleep 0.05
	done
	fail "node 2: repl_rejected_$1 = $got, want >= $2"
}
want replay 1
want bad_mac 3
want malformed 2
want not_member 1

log "the cluster goes on: 300 more publishes acknowledged, node 2 holds them all, ISR {1,2,3}"
seq -f "after %g" 1 300 > "$TMP/in2.txt"
publish_until "$NS" "$SUBNET.11" r "$TMP/in2.txt" "$TMP/acked2.txt" 300
wait "$PUBPID" || fail "publisher: $(cat "$TMP/acked2.txt.log")"
want_count=$(count_of 1)
[ "$want_count" -ge 2300 ] || fail "leader holds $want_count messages, want >= 2300"
for i in $(seq 100); do
	[ "$(count_of 2)" = "$want_count" ] && break
	sleep 0.1
done
[ "$(count_of 2)" = "$want_count" ] ||
	fail "node 2 holds $(count_of 2) messages, the leader $want_count: it stopped following"
[ "$(isr_of 1 | tr , '\n' | sort -n | paste -sd,)" = 1,2,3 ] || fail "ISR is $(isr_of 1)"
log "ok"
