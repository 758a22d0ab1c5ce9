#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A pipelined session keeps its order across follower restarts (issue 12, point 8). Three
# sluiced nodes on a bridge (cluster.sh), topic r (one partition, replicas 1,2,3, leader 1,
# each with a data directory). One sluice-pub session publishes increasing numbers with 32
# requests in flight while the followers are SIGKILLed and restarted, one after the other,
# KILLS times, and more (up to 4 x KILLS) until a publish met a rejoin pause. Each restarted follower catches up and rejoins, and the leader pauses writes
# for the rejoin (SL_E_WRITE_DISABLED): the publishes that meet the pause are refused and
# retried, and the later ones of the session must not pass them. At the end the leader's
# log holds every acknowledged number once, in increasing order: the test counts the
# reorderings (a number below the one before it) and fails on any.
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-rord-$$
SUBNET=10.85.$(( $$ % 200 ))
KILLS=${REPL_ORDER_KILLS:-6}
STEP=1000	# acknowledgements between two kills
RATE=${REPL_ORDER_RATE:-20}	# lines per 10 ms

. "$(dirname "$0")/../integration/cluster.sh"

acked() { wc -l < "$TMP/acked.txt"; }

# wait_acked N: until N publishes are acknowledged; 1 when sluice-pub ended first
wait_acked() {
	local i
	for i in $(seq 600); do
		[ "$(acked)" -ge "$1" ] && return 0
		kill -0 "$PUBPID" 2>/dev/null || return 1
		sleep 0.1
	done
	fail "fewer than $1 publishes acknowledged in 60 s"
}

# the leader's answers by error code, summed over its workers
leader_errs() {
	ctl n1 stats workers | python3 -c '
import json, sys
w = json.load(sys.stdin)["workers"]
print(sum(x["errors_by_code"].get(sys.argv[1], 0) for x in w))' "$1"
}

make_bridge
for id in 1 2 3; do
	boot $id --data-dir "$TMP/data$id" --log-mb 8
done

log "one session publishes increasing numbers ($RATE every 10 ms), 32 in flight"
: > "$TMP/acked.txt"
# numbers at about 10,000 a second until the stop file appears
python3 -c '
import os, sys, time
i, stop = 0, sys.argv[1]
while not os.path.exists(stop):
    for _ in range(int(sys.argv[2])):
        i += 1
        sys.stdout.write("%d\n" % i)
    sys.stdout.flush()
    time.sleep(0.01)
' "$TMP/stop" "$RATE" | ip netns exec "$NS" "$PUB" -a "$SUBNET.11" -w 32 -A "$TMP/acked.txt" r \
	> /dev/null 2> "$TMP/pub.log" &
PUBPID=$!
PIDS+=("$PUBPID")
wait_acked $STEP || fail "sluice-pub ended early: $(cat "$TMP/pub.log")"

# kill k: SIGKILL a follower (3 on odd k, 2 on even), restart it, wait for its rejoin and
# STEP more acknowledgements; 1 when sluice-pub ended first
kill_one() {
	local k=$1 f other
	f=$(( k % 2 == 1 ? 3 : 2 ))
	other=$(( f == 3 ? 2 : 3 ))
	kill -KILL "${NODE_PID[$f]}"
	wait "${NODE_PID[$f]}" 2>/dev/null
	wait_isr "1,$other"
	boot $f --data-dir "$TMP/data$f" --log-mb 8
	wait_isr 1,2,3
	wait_acked $(( $(acked) + STEP )) || return 1
	log "$(date +%T) kill $k: node $f killed, restarted and back in the ISR" \
		"($(acked) acknowledged)"
}

# KILLS rejoins, then more (up to 4 x KILLS) until a publish met a rejoin pause: a pause
# lasts the final catch-up only, so a few rejoins may see no publish at all
k=0
while [ $k -lt "$KILLS" ] || { [ "$(leader_errs "writes disabled")" -eq 0 ] &&
				[ $k -lt $(( 4 * KILLS )) ]; }; do
	k=$(( k + 1 ))
	kill_one $k || break
done

touch "$TMP/stop"
pub_rc=0
wait "$PUBPID" || pub_rc=$?
log "sluice-pub (exit $pub_rc): $(cat "$TMP/pub.log")"
N=$(acked)
paused=$(leader_errs "writes disabled")
ooo=$(leader_errs "an earlier publish of this session was refused: retry it first")
log "$N acknowledged; the leader refused $paused publishes with writes disabled and $ooo" \
	"out of order"
[ "$paused" -gt 0 ] || fail "no publish met a rejoin pause: nothing was tested"

wait_counts
in_ns "$NS" "$SUB" -a "$SUBNET.11" -c check -n "$c1" -t 30 --from-start r \
	> "$TMP/out.txt" 2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
python3 - "$TMP/out.txt" "$TMP/acked.txt" <<'PY' || fail "the session's order in the log"
import collections, sys
got = [int(l) for l in open(sys.argv[1]).read().split("\n")[:-1]]
acked = set(int(l) for l in open(sys.argv[2]).read().split("\n")[:-1])
dup = [m for m, n in collections.Counter(got).items() if n > 1]
missing = acked - set(got)
reorder = sum(1 for i in range(1, len(got)) if got[i] < got[i - 1])
print("[repl_order] %d messages in the leader's log, %d reorderings, %d twice, "
      "%d acknowledged missing" % (len(got), reorder, len(dup), len(missing)))
assert reorder == 0, "%d reorderings, e.g. at %s" % (reorder, [
    (got[i - 1], got[i]) for i in range(1, len(got)) if got[i] < got[i - 1]][:5])
assert not missing, "acknowledged numbers missing, e.g. %s" % sorted(missing)[:3]
assert not dup, "numbers twice, e.g. %s" % dup[:3]
PY
[ "$pub_rc" = 0 ] || fail "sluice-pub failed: $(cat "$TMP/pub.log")"
for id in 1 2 3; do
	stop_pid "${NODE_PID[$id]}" || fail "node $id exited with $? on SIGTERM"
done
log "PASS"
