#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The idempotent producer across a SIGKILL of a single node (issue 13 point 7;
# docs/protocol.md section 8 rule 11, docs/storage.md "Producer tags"): sluiced with a data
# directory on a net_tap port in a namespace this test creates, topics `pd` (durability
# disk) and `pm` (durability memory). A raw-protocol client with a producer id
# (producer_kill.py) publishes N PUBs and MPUBs to each and notes every answer. sluiced
# gets SIGKILL (no clean stop: no save of any kind) and restarts on the same directory.
# The client, as one whose OKs were lost, sends the (producer, seq) again in a new
# session: each of the last 128 (what the producer table remembers per producer) must get
# its original id, an older one SEQ_OLD, and each partition must hold exactly what was
# written before the kill plus one new publish (nothing written twice). Fails on a build
# whose producer table does not survive a crash (it starts empty: every retry written
# again).
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-pkill-$$
IF=slpk$$
IF=${IF:0:15}
BROKER=10.79.$(( $$ % 200 )).2
HOST=10.79.$(( $$ % 200 )).1
DATA=$TMP/data
N=${PK_N:-140}
PY="$(dirname "$0")/producer_kill.py"

make_netns "$NS"
boot() {
	start_sluiced pk "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--data-dir "$DATA" --topic pd:1:disk --topic pm:1:memory --log-mb 16
	in_ns "$NS" ip addr replace "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
}
count_of() {
	ctl pk topic info "$1" | python3 -c 'import json, sys
print(json.load(sys.stdin)["partition_info"][0]["message_count"])'
}
boot
for t in pd pm; do
	in_ns "$NS" python3 "$PY" before "$BROKER" "$t" "$TMP/$t.json" "$N" ||
		fail "publishing to $t"
	eval "before_$t=$(count_of $t)"
done
log "acknowledged: pd $before_pd messages, pm $before_pm; SIGKILL"
kill -KILL "$SLUICED_PID"
wait "$SLUICED_PID" 2>/dev/null
boot
for t in pd pm; do
	in_ns "$NS" python3 "$PY" after "$BROKER" "$t" "$TMP/$t.json" ||
		fail "retries to $t after the restart"
	c=$(count_of $t)
	eval "b=\$before_$t"
	log "$t: $c messages after the retries and one new publish ($b before the kill)"
	new=$(( (N + 1) % 3 == 0 ? 3 : 1 ))	# seq N+1: an MPUB of 3 or a PUB
	[ "$c" = $((b + new)) ] || fail "$t holds $c messages, not $((b + new)): written twice"
done
dup=$(ctl pk topic info pd | python3 -c '
import json, sys
print(json.load(sys.stdin)["partition_info"][0].get("producer_dups", "missing"))')
log "pd answered $dup retries from its rebuilt producer table"
[ "$dup" -ge 128 ] 2>/dev/null || fail "producer_dups of pd: $dup"
log "PASS"
