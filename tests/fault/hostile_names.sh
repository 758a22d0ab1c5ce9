#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Hostile names, auto-creation floods and foreign directories against a live sluiced on
# net_tap in a namespace, with a data directory (the protocol side is hostile_names.py):
#  1. names: PUB, MPUB, SUB, FIN to '..', '.', '.x', 'a/b', NUL, ... are answered
#     SL_E_NAME; `sluicectl topic create` / `channel create` of each is refused naming the
#     rule; NUL bytes on the control socket are refused; nothing is written, inside the data
#     directory or next to it; --topic .. and a cluster file naming '..' stop the start
#     with a clear error; the acknowledged messages of the good topic survive a restart.
#  2. flood: room for 6 topics of --log-mb 4 (--log-budget-mb 24); 300 publishes to 300
#     new names: every one answered (OK or SL_E_CAPACITY), the first publish to a new
#     topic runs on it without a retransmission, one refused at capacity gets
#     SL_E_CAPACITY without one, the budget and the topic limit hold, the data directory
#     holds exactly the topics that exist, the existing topic keeps serving; a creation
#     that fails half way (no budget, memory runs out) leaves nothing and the node serves
#     on; the node restarts cleanly with every topic.
#  3. foreign and damaged entries in the data directory at start (lost+found, a directory
#     without topic.conf, a hidden topic of an older build, a bad topic.conf, a topic whose
#     partition is not a directory, a plain file): the node starts, logs each naming it and
#     what to do, serves the good topics, and never takes a foreign directory over; a
#     lower --max-topics at start skips (and logs) the topics past it.
. "$(dirname "$0")/../integration/lib.sh"

PY="$(dirname "$0")/hostile_names.py"
NS=sl-hn-$$
IF=slhn$$
IF=${IF:0:15}
BROKER=10.76.$(( $$ % 200 )).2
HOST=10.76.$(( $$ % 200 )).1
# the data directories sit one level down in $TMP/d*: a name that escapes would write
# into $TMP/d* or $TMP, where the test looks for strays
DATA=$TMP/d1/data
DATA2=$TMP/d2/data
mkdir -p "$TMP/d1" "$TMP/d2"

make_netns "$NS"
boot() {
	local name=$1
	shift
	start_sluiced "$name" "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" "$@"
	in_ns "$NS" ip addr replace "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
	in_ns "$NS" ping -c 1 -W 2 "$BROKER" > /dev/null || fail "broker unreachable"
}
py() {
	in_ns "$NS" python3 "$PY" "$@"
}
# start_fails NAME PATTERN SLUICED_ARGS...: sluiced must exit non-zero during start and
# its log must say PATTERN
start_fails() {
	local name=$1 pattern=$2 rc
	shift 2
	# shellcheck disable=SC2086
	timeout 60 "$SLUICED" $SLUICE_EAL --file-prefix "sl-$name-$$" -- --control \
		"$TMP/$name.sock" --port "net_null0" --ip "$BROKER" "$@" > "$TMP/$name.log" 2>&1
	rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "$name: sluiced did not refuse to start (rc $rc)"
	grep -q -- "$pattern" "$TMP/$name.log" ||
		fail "$name: the log does not say '$pattern': $(tail -n 5 "$TMP/$name.log")"
	log "$name: refused: $(grep -m1 -- "$pattern" "$TMP/$name.log")"
}
# strays: no topic file may exist outside a topic directory of a data directory
no_strays() {
	local s
	s=$(find "$TMP" \( -name topic.conf -o -name '*.msg' -o -name '*.clog' \) |
		grep -v -E "^($DATA|$DATA2)/[A-Za-z0-9_#-][A-Za-z0-9._#-]*/" || true)
	[ -z "$s" ] || fail "$1: files outside the data directory's topics: $s"
	for s in "$TMP"/d1 "$TMP"/d2 "$TMP"; do
		[ ! -e "$s/topic.conf" ] && [ ! -e "$s/0" ] || fail "$1: topic files in $s"
	done
}
topics_on_disk() {
	find "$1" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | tr '\n' ' '
}
status_field() {
	ctl "$1" status | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

# ---- 1. names ----
log "1. hostile names (protocol, control socket, --topic, cluster file)"
boot n1 --data-dir "$DATA" --durability disk --auto-create --log-mb 4 --topic good:1
seq -f "good message %03g" 1 100 > "$TMP/good.txt"
in_ns "$NS" "$PUB" -a "$BROKER" good < "$TMP/good.txt" 2> "$TMP/pub-good.log" ||
	fail "publish to good: $(cat "$TMP/pub-good.log")"
py names "$BROKER" "$CTL" "$TMP/n1.sock" || fail "hostile names over the protocol and socket"
[ "$(topics_on_disk "$DATA")" = "good " ] ||
	fail "the data directory holds more than good: $(topics_on_disk "$DATA")"
no_strays "names"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

start_fails topicarg "invalid name" --data-dir "$DATA" --topic ..:1
start_fails topicarg2 "invalid name" --data-dir "$DATA" --topic .x
cat > "$TMP/cluster.conf" <<-CONF
	node 1 $BROKER
	partition .. 0 replicas=1 leader=1 isr=1
CONF
start_fails clusterfile "bad topic name '..'" --data-dir "$DATA" --cluster "$TMP/cluster.conf"
no_strays "--topic and cluster file"

boot n1 --data-dir "$DATA" --durability disk --auto-create --log-mb 4
grep -q "1 topic(s) recovered" "$TMP/n1.log" || fail "good not recovered"
in_ns "$NS" "$SUB" -a "$BROKER" -c after -n 101 --from-start good > "$TMP/good-sub.txt" \
	2> "$TMP/sub-good.log" || fail "sluice-sub good: $(cat "$TMP/sub-good.log")"
{ cat "$TMP/good.txt"; echo "after the bad names"; } | cmp - "$TMP/good-sub.txt" ||
	fail "good lost acknowledged messages across the restart"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

# ---- 2. auto-creation flood ----
log "2. auto-creation flood: room for 6 topics"
# (the memory budget counts what partitions hold, 24 KiB each when idle: the room is
# --max-topics here)
FLOOD=(--data-dir "$DATA2" --auto-create --log-mb 4 --max-topics 6)
boot n2 "${FLOOD[@]}" --topic keep:1
seq -f "keep message %03g" 1 50 > "$TMP/keep.txt"
in_ns "$NS" "$PUB" -a "$BROKER" keep < "$TMP/keep.txt" 2> "$TMP/pub-keep.log" ||
	fail "publish to keep: $(cat "$TMP/pub-keep.log")"
# a publish that creates its topic is executed on it: answered OK, no retransmission
py one "$BROKER" zf-first 0 || fail "the publish that auto-creates a topic"
py flood "$BROKER" "$CTL" "$TMP/n2.sock" 300 > "$TMP/flood.out" 2>&1
rc=$?
cat "$TMP/flood.out"
[ $rc -eq 0 ] || fail "auto-creation flood"
grep -q "RESULT oks=4 caps=296 topics=6" "$TMP/flood.out" ||
	fail "expected 4 more topics and 296 refusals: $(grep RESULT "$TMP/flood.out")"
# refused at capacity: answered at once, nothing created
py one "$BROKER" zf-last 1024 || fail "the publish refused at capacity"
[ "$(status_field n2 topics)" = 6 ] || fail "topics: $(status_field n2 topics)"
[ "$(topics_on_disk "$DATA2" | wc -w)" = 6 ] ||
	fail "the data directory holds other than the 6 topics: $(topics_on_disk "$DATA2")"
ctl n2 topic create more > "$TMP/more.json" 2>&1 && fail "a 7th topic was created"
grep -q "no room" "$TMP/more.json" || fail "topic create past the budget: $(cat "$TMP/more.json")"
[ ! -e "$DATA2/more" ] || fail "a refused topic left $DATA2/more"
echo "keep message after the flood" | in_ns "$NS" "$PUB" -a "$BROKER" keep ||
	fail "keep refuses publishes after the flood"
no_strays "flood"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

log "2b. a creation that fails half way leaves nothing"
# logs are reserved, not allocated, so memory no longer runs out half way: file
# descriptors do (each partition's store keeps files open), with the node's limit lowered
# to 300 once it runs
boot n2 --data-dir "$DATA2" --log-mb 64 --log-budget-mb 0 --durability disk
prlimit --pid "$SLUICED_PID" --nofile=300:300 || fail "prlimit"
ctl n2 topic create huge 1024 > "$TMP/huge.json" 2>&1 && fail "1024 partitions in 300 files?"
grep -q "no room\|I/O" "$TMP/huge.json" || fail "half-way failure: $(cat "$TMP/huge.json")"
[ ! -e "$DATA2/huge" ] || fail "the failed creation left $DATA2/huge: $(ls "$DATA2/huge" | head)"
echo "keep message after the failed creation" | in_ns "$NS" "$PUB" -a "$BROKER" keep ||
	fail "keep refuses publishes after a failed creation"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

log "2c. restart after the flood"
boot n2 "${FLOOD[@]}" --topic keep:1
grep -q "6 topic(s) recovered" "$TMP/n2.log" || fail "not every topic came back: $(grep recovered "$TMP/n2.log")"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

# ---- 3. foreign and damaged entries at start ----
log "3. foreign and damaged entries in the data directory"
mkdir -p "$DATA2/lost+found" "$DATA2/noconf" "$DATA2/.hidden" "$DATA2/badconf" "$DATA2/dmg"
echo "not sluice's" > "$DATA2/noconf/precious"
printf 'version=1\npartitions=1\ndurability=memory\n' > "$DATA2/.hidden/topic.conf"
echo "garbage" > "$DATA2/badconf/topic.conf"
printf 'version=1\npartitions=1\ndurability=memory\n' > "$DATA2/dmg/topic.conf"
echo "not a partition directory" > "$DATA2/dmg/0"
echo "stray file" > "$DATA2/afile"
# room for one more topic than the 6 there: --topic noconf and auto-creation get past the
# budget and meet the foreign directory
boot n2 --data-dir "$DATA2" --auto-create --log-mb 4 --log-budget-mb 28 --topic keep:1 \
	--topic noconf:1
for e in "'lost+found' skipped" "'noconf' skipped" "'.hidden' skipped" "'afile' skipped" \
	"topic badconf not loaded" "topic dmg not loaded"; do
	grep -F -- "$e" "$TMP/n2.log" | grep -q "move" ||
		fail "start did not log $e with what to do"
done
log "start logged: $(grep -c -E "skipped|not loaded" "$TMP/n2.log") entries skipped"
grep -q "6 topic(s) recovered" "$TMP/n2.log" || fail "the good topics not recovered"
grep -q "\-\-topic noconf:1: not served" "$TMP/n2.log" || fail "--topic over a foreign directory"
in_ns "$NS" "$SUB" -a "$BROKER" -c after2 -n 52 --from-start keep > "$TMP/keep-sub.txt" \
	2> "$TMP/sub-keep.log" || fail "sluice-sub keep: $(cat "$TMP/sub-keep.log")"
{ cat "$TMP/keep.txt"; echo "keep message after the flood"
  echo "keep message after the failed creation"; } | cmp - "$TMP/keep-sub.txt" ||
	fail "keep lost acknowledged messages"
# a foreign directory is never taken over: not by auto-creation, not by the socket
py one "$BROKER" noconf 1016 || fail "auto-creation over a foreign directory"
ctl n2 topic create noconf > /dev/null 2>&1 && fail "topic create over a foreign directory"
[ "$(ls -A "$DATA2/noconf")" = precious ] || fail "noconf was touched: $(ls -A "$DATA2/noconf")"
[ -e "$DATA2/lost+found" ] && [ -e "$DATA2/dmg/0" ] && [ -e "$DATA2/afile" ] ||
	fail "start removed a foreign entry"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

log "3b. fewer topics allowed at start than the data directory holds"
boot n2 "${FLOOD[@]}" --max-topics 3
grep -q "3 topic(s) recovered" "$TMP/n2.log" || fail "$(grep recovered "$TMP/n2.log")"
grep "not loaded: no room" "$TMP/n2.log" | grep -q "max-topics" ||
	fail "topics past --max-topics not logged with what to do"
echo "keep message with fewer topics" | in_ns "$NS" "$PUB" -a "$BROKER" keep ||
	fail "keep not served with --max-topics 3"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
