#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Catch-up past the leader's retention (Kafka's log start offset), with real processes:
# three nodes on a bridge (cluster.sh), topic `r` with replicas 1,2,3. Nodes 1 (the
# leader) and 2 keep it in memory only; node 3 has a data directory. A consumer on the
# leader finishes every message, so the leader drops them from memory.
#  1. 3,000 messages, consumed; node 3 is SIGKILLed; 3,000 more, consumed: the leader's
#     log now starts after node 3's end.
#  2. Node 3 restarts on its disk log (which ends near 3,000) and asks for what follows;
#     the leader answers where its log starts; node 3 drops its log, memory and disk,
#     starts it over there and rejoins the ISR.
#  3. 1,000 more messages reach all three. A clean restart of node 3 recovers its reset
#     disk log, which starts at the leader's first id, and it rejoins with no new reset.
. "$(dirname "$0")/lib.sh"

NS=sl-rreset-$$
SUBNET=10.88.$(( $$ % 200 ))
. "$(dirname "$0")/cluster.sh"

make_bridge
boot 1
boot 2
boot 3 --data-dir "$TMP/data3"

publish() {	# publish FROM TO: messages FROM..TO, every one acknowledged
	seq -f "m%06g" "$1" "$2" | in_ns "$NS" "$PUB" -a "$SUBNET.11" r 2> "$TMP/pub.log" ||
		fail "sluice-pub: $(cat "$TMP/pub.log")"
}
consume() {	# consume N [ARGS]: channel c on the leader takes (and finishes) N messages
	local n=$1
	shift
	in_ns "$NS" "$SUB" -a "$SUBNET.11" -c c -n "$n" -t 30 "$@" r > "$TMP/sub.txt" \
		2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
	[ "$(wc -l < "$TMP/sub.txt")" = "$n" ] || fail "consumed $(wc -l < "$TMP/sub.txt") of $n"
}
repl_field() {	# repl_field NODE FIELD: a replication counter of r/0 on NODE
	ctl "n$1" topic info r | python3 -c '
import json, sys
print(json.load(sys.stdin)["partition_info"][0]["replication"][sys.argv[1]])' "$2"
}
# rejoin: node 3 (re)started learns from the leader that it is out of the ISR, catches
# up and asks to rejoin
rejoin() {
	wait_isr 1,2,3
	wait_isr 1,2,3 3
}

log "phase 1: 3000 messages, consumed; node 3 killed; 3000 more, consumed"
publish 1 3000
consume 3000 --from-start
kill -KILL "${NODE_PID[3]}"
wait "${NODE_PID[3]}" 2>/dev/null
publish 3001 6000
wait_isr 1,2
consume 3000
for i in $(seq 100); do
	first=$(part_field 1 first_id)
	[ "$first" -gt 3001 ] && break
	sleep 0.1
done
[ "$first" -gt 3001 ] || fail "the leader still holds messages from $first"
log "the leader's log starts at $first"

log "phase 2: node 3 restarts behind the leader's log, starts over and rejoins"
boot 3 --data-dir "$TMP/data3"
end3=$(count_of 3)
[ "$end3" -ge 3000 ] && [ "$end3" -lt "$first" ] || fail "node 3 recovered to $end3"
rejoin
[ "$(repl_field 3 resets)" = 1 ] || fail "node 3 resets: $(repl_field 3 resets)"
[ "$(repl_field 1 resets)" -ge 1 ] || fail "the leader answered no reset"
first3=$(part_field 3 first_id)
[ "$first3" -ge "$first" ] || fail "node 3's log starts at $first3, before the leader's $first"
wait_counts
[ "$c1" = 6000 ] || fail "the leader holds $c1 messages"
log "node 3 started over at $first3 (it had $end3) and is in the ISR again"

log "phase 3: 1000 more through the full ISR; node 3 restarts cleanly"
publish 6001 7000
wait_counts
[ "$c3" = 7000 ] || fail "node 3 holds $c3 messages"
consume 1000
grep -q '^m007000$' "$TMP/sub.txt" || fail "the last message was not delivered"
stop_pid "${NODE_PID[3]}" || fail "node 3 exited with $? on SIGTERM"
boot 3 --data-dir "$TMP/data3"
ctl n3 topic info r > "$TMP/st3.json" || fail "topic info"
python3 - "$TMP/st3.json" "$first3" <<'PY' || fail "node 3's disk log: $(cat "$TMP/st3.json")"
import json, sys
st = json.load(open(sys.argv[1]))["partition_info"][0]["storage"]
assert st["disk_first_id"] == int(sys.argv[2]) and st["recovery"]["end_id"] == 7000, st
PY
rejoin
[ "$(repl_field 3 resets)" = 0 ] || fail "node 3 reset again after a clean restart"
wait_counts
log "node 3's disk log starts at $first3 after the restart; no new reset"
log "PASS"
