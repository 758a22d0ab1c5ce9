#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The idempotency state follows the log (issue 13 point 7; docs/protocol.md section 8.11,
# docs/replication.md "Producer tags"): a three-node static cluster (cluster.sh), topic `r`
# led by node 1. A raw-protocol client (idem_failover.py) with a producer id publishes a PUB
# and an MPUB that node 1 acknowledges (so every ISR member holds them). Node 1 is
# SIGKILLed and node 2 made leader (`partition set` on the survivors). The client, as one
# whose OKs were lost, sends both again with the same producer id and seqs in a new session
# to node 2: node 2 must answer with the original ids and offsets and write nothing, and
# at the end node 2's log holds every message exactly once.
. "$(dirname "$0")/lib.sh"

NS=sl-idem-$$
SUBNET=10.87.$(( $$ % 200 ))

. "$(dirname "$0")/cluster.sh"

make_bridge
for id in 1 2 3; do
	boot $id
done
PY="$(dirname "$0")/idem_failover.py"

log "publishing with a producer id to the leader, node 1"
in_ns "$NS" python3 "$PY" before "$SUBNET.11" "$TMP/ids.json" || fail "publishing to node 1"
wait_counts
[ "$c2" = 3 ] || fail "node 2 holds $c2 messages, not 3"

log "SIGKILL node 1; node 2 leads"
kill -KILL "${NODE_PID[1]}"
wait "${NODE_PID[1]}" 2> /dev/null
for id in 3 2; do
	ctl "n$id" partition set r 0 leader=2 isr=2,3 epoch=2 session=2 > "$TMP/set$id.json" ||
		fail "partition set on node $id: $(cat "$TMP/set$id.json")"
done

log "the same (producer, seq) again at node 2, in a new session"
in_ns "$NS" python3 "$PY" after "$SUBNET.12" "$TMP/ids.json" || fail "retries at node 2"

log "node 2's log holds every message once"
c2=$(count_of 2)
[ "$c2" = 5 ] || fail "node 2 holds $c2 messages, not 5 (once-1, once-2a, once-2b, once-3, plain)"
in_ns "$NS" "$SUB" -a "$SUBNET.12" -c check -n 5 -t 30 --from-start r \
	> "$TMP/out.txt" 2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
printf 'once-1\nonce-2a\nonce-2b\nonce-3\nplain\n' | diff - "$TMP/out.txt" ||
	fail "node 2's log is not once-1 once-2a once-2b once-3 plain"
dup=$(ctl n2 topic info r | python3 -c '
import json, sys
print(json.load(sys.stdin)["partition_info"][0].get("producer_dups", "missing"))')
log "node 2 answered $dup retries from its producer table"
[ "$dup" -ge 3 ] 2> /dev/null || fail "producer_dups on node 2: $dup"
log "PASS"
