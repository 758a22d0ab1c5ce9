#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The persistence lcore of an idle node with a disk topic (--idle adaptive): sluiced on a
# net_tap port in a namespace this test creates, a data directory, topic `pi` with
# durability disk and --sync always. Checks that once idle the lcore blocks on its bell
# instead of sleeping 50 us at a time (its idle sleeps over two idle seconds stay far below
# the 20,000 a second it took before the bell, and it counts blocks); that each of five
# publishes made after an idle period is acknowledged (after its fdatasync) and that the
# publish itself woke the blocked lcore (its bell_wakes count grows: a lost bell would end
# the block by its time-out instead, the 100 ms periodic pass, and this check fails); that
# the five are on disk, read back after a restart; and that sluiced stops on SIGTERM with
# exit 0 while the lcore blocks.
. "$(dirname "$0")/lib.sh"

NS=sl-pidle-$$
IF=slpi$$
IF=${IF:0:15}
BROKER=10.77.$(( $$ % 200 )).2
HOST=10.77.$(( $$ % 200 )).1
DATA=$TMP/data
ROUNDS=5

make_netns "$NS"
start_node() {
	start_sluiced pidle "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--data-dir "$DATA" --topic pi:1:disk --sync always --idle adaptive --log-mb 8
	in_ns "$NS" ip addr replace "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
}
start_node

# pstat KEY: the persistence lcore's counter KEY (sluicectl stats workers: "persist")
pstat() {
	ctl pidle stats workers | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["persist"][sys.argv[1]])' "$1"
}

echo "first" | in_ns "$NS" "$PUB" -a "$BROKER" -q pi || fail "first publish not acknowledged"

# await_block N: until the lcore has blocked more than N times (bounded: 30 s)
await_block() {
	local i
	for i in $(seq 300); do
		[ "$(pstat idle_blocks)" -gt "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

log "an idle persistence lcore blocks"
await_block 0 || fail "the persistence lcore never blocked (idle_blocks 0)"
s0=$(pstat idle_sleeps) || fail "stats workers"
sleep 2
s1=$(pstat idle_sleeps) || fail "stats workers"
log "its idle sleeps in 2 idle seconds: $(( s1 - s0 )) (before the bell: about 40,000)"
[ $(( s1 - s0 )) -lt 2000 ] || fail "$(( s1 - s0 )) idle sleeps in 2 s: it does not block"

log "$ROUNDS publishes, each after an idle period, wake it"
for r in $(seq $ROUNDS); do
	b=$(pstat idle_blocks)
	await_block "$b" || fail "round $r: the lcore did not block again"
	w0=$(pstat bell_wakes)
	echo "after idle $r" | in_ns "$NS" "$PUB" -a "$BROKER" -q pi ||
		fail "publish $r after an idle period not acknowledged"
	w1=$(pstat bell_wakes)
	[ "$w1" -gt "$w0" ] || fail "publish $r did not ring the bell (bell_wakes $w0 -> $w1)"
done
log "$ROUNDS publishes acknowledged, each woke the blocked lcore"

log "clean shutdown while it blocks, then the messages from disk"
await_block "$(pstat idle_blocks)" || fail "the lcore did not block before the stop"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
start_node
in_ns "$NS" "$SUB" -a "$BROKER" -c c -n $(( ROUNDS + 1 )) --from-start pi > "$TMP/out.txt" \
	2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
{ echo first; seq -f "after idle %g" 1 $ROUNDS; } | cmp - "$TMP/out.txt" ||
	fail "read back: $(cat "$TMP/out.txt")"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
