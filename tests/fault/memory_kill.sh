#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# SIGKILL of sluiced with a `memory`-durability topic in a data directory (issue 12,
# point 6): a process kill loses nothing acknowledged, and no id is ever given to two
# different bodies across restarts. sluiced on a net_tap port in a namespace this test
# creates, topic `mk` (durability memory).
# ROUNDS times: a consumer prints every message with its id (sluice-sub -i) while
# sluice-pub -A publishes fresh lines and logs each acknowledged one; once KILL_AT are
# acknowledged sluiced gets SIGKILL and restarts on the same data directory. At the end a
# new channel reads the whole partition from the start. Checks:
#  (a) every acknowledged line of every round is in the partition exactly once;
#  (b) every id seen by any consumer, before or after any restart, names one body only,
#      and every body one id only.
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-mkill-$$
IF=slmk$$
IF=${IF:0:15}
BROKER=10.79.$(( $$ % 200 )).2
HOST=10.79.$(( $$ % 200 )).1
DATA=$TMP/data
ROUNDS=${MK_ROUNDS:-6}
N=400000
KILL_AT=100000

# publish IN in MPUBs of 64 lines (a rate at which the disk copy is always a little behind)
# with -A ACKED; return once n lines are acknowledged. Sets PUBPID.
publish_bg() {
	local in=$1 acked=$2 n=$3 i
	: > "$acked"
	# a plain command in the background (not a function): $! is the process itself
	ip netns exec "$NS" "$PUB" -a "$BROKER" -b 64 -A "$acked" mk < "$in" > /dev/null \
		2> "$acked.log" &
	PUBPID=$!
	PIDS+=("$PUBPID")
	for i in $(seq 600); do
		[ "$(wc -l < "$acked")" -ge "$n" ] && return 0
		# a publisher refused mid-stream still left its acknowledged lines: kill anyway
		kill -0 "$PUBPID" 2>/dev/null || { log "sluice-pub ended: $(cat "$acked.log")"; return 0; }
		sleep 0.05
	done
	fail "fewer than $n publishes acknowledged in 30 s"
}

make_netns "$NS"
boot() {
	start_sluiced mk "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--data-dir "$DATA" --topic mk:1:memory --log-mb 16 --sub-channels 0 \
		--sub-channels-per-source 0
	in_ns "$NS" ip addr replace "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
}
boot
grep -q '^durability=memory$' "$DATA/mk/topic.conf" ||
	fail "topic.conf: $(cat "$DATA/mk/topic.conf")"

for r in $(seq "$ROUNDS"); do
	log "round $r: $N lines, SIGKILL after $KILL_AT acknowledgements"
	seq -f "round $r line %06g" 1 $N > "$TMP/in$r.txt"
	ip netns exec "$NS" "$SUB" -a "$BROKER" -i -e -c "watch$r" --from-end mk \
		> "$TMP/seen$r.txt" 2> "$TMP/watch$r.log" &
	SUBPID=$!
	PIDS+=("$SUBPID")
	publish_bg "$TMP/in$r.txt" "$TMP/acked$r.txt" $KILL_AT
	kill -KILL "$SLUICED_PID"
	wait "$SLUICED_PID" 2>/dev/null
	wait "$PUBPID" 2>/dev/null && fail "sluice-pub succeeded although the broker died"
	kill -TERM "$SUBPID" 2>/dev/null
	wait "$SUBPID"
	log "round $r: $(wc -l < "$TMP/acked$r.txt") acknowledged, $(wc -l < "$TMP/seen$r.txt") seen"
	boot
	grep -o "[0-9]* message(s) (ids [0-9.]*) acknowledged" "$TMP/mk.log" |
		sed "s/^/[$TEST_NAME] restart $r: taken back from the memory log file: /"
done

ctl mk topic info mk > "$TMP/info.json" || fail "topic info"
M=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["partition_info"][0]["message_count"])' "$TMP/info.json")
log "after $ROUNDS kills: $M messages"
in_ns "$NS" "$SUB" -a "$BROKER" -i -c all -n "$M" -t 30 --from-start mk > "$TMP/final.txt" \
	2> "$TMP/final.log" || fail "sluice-sub all: $(cat "$TMP/final.log")"
python3 - "$TMP" "$ROUNDS" "$M" "$(dirname "$0")/../integration" <<'PY' || fail "content check"
import sys
tmp, rounds, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

sys.path.insert(0, sys.argv[-1])
from slproto import sub_pairs as pairs  # noqa: E402

final = pairs(tmp + "/final.txt")
assert len(final) == m, ("read back", len(final), "of", m)
bodies = [b for _, b in final]
count = {}
for b in bodies:
    count[b] = count.get(b, 0) + 1
errs = []
for r in range(1, rounds + 1):
    acked = [int(x) for x in open("%s/acked%d.txt" % (tmp, r)).read().split()]
    lost = [a for a in acked if count.get("round %d line %06d" % (r, a), 0) == 0]
    twice = [a for a in acked if count.get("round %d line %06d" % (r, a), 0) > 1]
    print("round %d: %d acknowledged, %d lost, %d present twice" %
          (r, len(acked), len(lost), len(twice)))
    if lost:
        errs.append("round %d: acknowledged but lost: %d, first %s" % (r, len(lost), lost[:5]))
    if twice:
        errs.append("round %d: acknowledged, present twice: %s" % (r, twice[:5]))
by_id, by_body = {}, {}
seen = final[:]
for r in range(1, rounds + 1):
    seen += pairs("%s/seen%d.txt" % (tmp, r))
for i, b in seen:
    by_id.setdefault(i, set()).add(b)
    by_body.setdefault(b, set()).add(i)
reused = {i: sorted(bs) for i, bs in by_id.items() if len(bs) > 1}
moved = {b: sorted(ids) for b, ids in by_body.items() if len(ids) > 1}
print("%d ids seen, %d given to two bodies, %d bodies under two ids" %
      (len(by_id), len(reused), len(moved)))
if reused:
    i = min(reused)
    errs.append("%d ids reused for another body, e.g. id %d: %s" % (len(reused), i, reused[i]))
if moved:
    errs.append("%d bodies under two ids, e.g. %s" % (len(moved), list(moved.items())[:2]))
if errs:
    print("\n".join(errs))
    sys.exit(1)
PY

log "clean shutdown"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
