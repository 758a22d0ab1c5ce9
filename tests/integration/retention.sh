#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Retention with a durable channel behind: topic `ret` keeps 1 MiB per partition in 256 KiB
# segments (--segment-mb is the smallest unit sluiced takes: 1 MiB, so 4 MiB are
# published). Channel `slow` exists but has consumed nothing: `storage status` shows the
# bytes held back, from which id and why, and nothing is removed. Once `slow` has consumed
# everything, the old segments go and the disk shrinks to the limit. A channel created with
# --keep-unconsumed 0 on topic `drop` does not hold anything back.
. "$(dirname "$0")/lib.sh"

NS=sl-ret-$$
IF=slret$$
IF=${IF:0:15}
BROKER=10.79.$(( $$ % 200 )).2
HOST=10.79.$(( $$ % 200 )).1
DATA=$TMP/data

make_netns "$NS"
start_sluiced ret "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
	--data-dir "$DATA" --segment-mb 1 --retain-mb 1 --durability disk
in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"
ctl ret topic create ret 1 > /dev/null || fail "topic create ret"
ctl ret topic create drop 1 --keep-unconsumed 0 > /dev/null || fail "topic create drop"
ctl ret channel create ret slow > /dev/null || fail "channel create"
ctl ret channel create drop slow > /dev/null || fail "channel create"

PAD=$(printf '%0980d' 0)
seq -f "r%06g-$PAD" 1 4000 > "$TMP/in.txt"	# ~4 MiB
for t in ret drop; do
	in_ns "$NS" "$PUB" -a "$BROKER" -b 1 "$t" < "$TMP/in.txt" 2> "$TMP/pub-$t.log" ||
		fail "publish $t: $(cat "$TMP/pub-$t.log")"
done

# retention runs every second: wait for its verdict rather than for a time
status() { ctl ret storage status "$1" > "$TMP/st-$1.json" && cat "$TMP/st-$1.json"; }
# wait_until TOPIC EXPR: until the Python expression EXPR holds for TOPIC's partition 0
# storage status (st), up to 10 s
wait_until() {
	local i
	for i in $(seq 100); do
		[ "$(status "$1" | python3 -c 'import json,sys
st = json.load(sys.stdin)["partitions"][0]["storage"]
print(bool(eval(sys.argv[1])))' "$2")" = True ] && return 0
		sleep 0.1
	done
	fail "$1: $2 not reached: $(cat "$TMP/st-$1.json")"
}
wait_for() {	# wait_for TOPIC FIELD: until the retention FIELD is non-zero
	wait_until "$1" "st['retention'].get('$2', 0) != 0"
}

log "a durable channel that consumed nothing holds the old segments back"
wait_for ret held_bytes
python3 - "$TMP/st-ret.json" <<'PY' || fail "held back: $(cat "$TMP/st-ret.json")"
import json, sys
st = json.load(open(sys.argv[1]))["partitions"][0]["storage"]
r = st["retention"]
assert r["removed_segments"] == 0, r
assert r["held_from_id"] == 1 and "channel" in r["held_because"], r
assert st["disk_bytes"] > 3 << 20, st
print("held %d bytes from id %d: %s" % (r["held_bytes"], r["held_from_id"], r["held_because"]))
PY

log "keep-unconsumed 0: the limit wins"
wait_for drop removed_segments

log "once the channel consumed everything, the old segments go"
in_ns "$NS" "$SUB" -a "$BROKER" -c slow -n 4000 -t 30 ret > "$TMP/out.txt" 2> "$TMP/sub.log" ||
	fail "sluice-sub: $(cat "$TMP/sub.log")"
cmp "$TMP/in.txt" "$TMP/out.txt" || fail "slow did not receive everything in order"
# the channel's position reaches the persistence lcore in steps (periodic saves): a
# retention pass may remove a first segment at an intermediate position, the next ones
# the rest; wait for the outcome, not for the first removal
wait_until ret "st['disk_bytes'] < 3 << 20"
python3 - "$TMP/st-ret.json" <<'PY' || fail "after consuming: $(cat "$TMP/st-ret.json")"
import json, sys
st = json.load(open(sys.argv[1]))["partitions"][0]["storage"]
assert st["disk_bytes"] < 3 << 20, st
assert st["disk_first_id"] > 1, st
print("removed %d segments; %d bytes on disk from id %d" %
      (st["retention"]["removed_segments"], st["disk_bytes"], st["disk_first_id"]))
PY
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
