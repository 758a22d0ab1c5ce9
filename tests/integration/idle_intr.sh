#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# --idle interrupt on a net_tap port (the one vdev with RX queue interrupts in DPDK 22.11)
# inside a network namespace this test creates, or (SL_IDLE_TEST_PORT=xdp, the meson test
# idle_intr_xdp) on a net_af_xdp port on one end of a veth pair in it, where the worker
# blocks on the queue's AF_XDP socket instead (skipped, 77, without the PMD or ethtool).
# Checks that the worker says it blocks on the
# queue's interrupt (socket); that after idle periods longer than its longest block
# (SL_WORKER_INTR_MAX_MS) a publish is still answered and delivered to a subscriber that
# waits (awaited, no timing), five times; that a command of the control socket reaches the
# idle worker (its bell); that an idle worker blocks instead of sleeping every
# millisecond (its idle count over two idle seconds stays far below the adaptive loop's
# one a millisecond: with --idle adaptive this check fails); on net_tap, that the
# per-frame signal does not wake the control thread (20,000 publishes, fewer than 1,000
# wake-ups of the main thread: 66 here, 4,426 when it took the signals); and that
# sluiced stops on SIGTERM with exit 0.
. "$(dirname "$0")/lib.sh"

NS=sl-idle-$$
IF=slidle$$
IF=${IF:0:15}
BROKER=10.78.$(( $$ % 200 )).2
HOST=10.78.$(( $$ % 200 )).1
ROUNDS=5
MODE=${SL_IDLE_TEST_MODE:-interrupt}	# "adaptive": shows the last check fails there
PORT=${SL_IDLE_TEST_PORT:-tap}

make_netns "$NS"
if [ "$PORT" = xdp ]; then
	if ! sl_have_pmd net_af_xdp ||
		! command -v ethtool > /dev/null; then
		log "SKIP: no net_af_xdp PMD or no ethtool"
		exit 77
	fi
	# the client's end keeps $IF's name and address; sluiced takes the other end
	in_ns "$NS" ip link add "$IF" type veth peer name "${IF:0:12}x" || fail "veth"
	in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address $IF"
	# a veth hands XDP the frame before its UDP checksum is filled in
	in_ns "$NS" ethtool -K "$IF" tx off > /dev/null || fail "ethtool -K $IF tx off"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
	in_ns "$NS" ip link set "${IF:0:12}x" up || fail "link up ${IF:0:12}x"
	start_sluiced idle "$NS" "" -- --port "net_af_xdp0,iface=${IF:0:12}x,busy_budget=0" \
		--ip "$BROKER/24" --topic it:1 --idle "$MODE"
	WHAT="its AF_XDP socket"
else
	start_sluiced idle "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" --topic it:1 \
		--idle "$MODE"
	in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
	WHAT="its interrupt"
fi
grep -q "idle blocks on $WHAT" "$TMP/idle.log" ||
	[ "$MODE" != interrupt ] || fail "the worker does not block on $WHAT ($PORT)"
ctl idle status | grep -q "\"idle\": \"$MODE\"" || fail "status: idle is not $MODE"

# await FILE N: until FILE has N lines (bounded: 60 s)
await_lines() {
	local i
	for i in $(seq 600); do
		[ "$(wc -l < "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

idle_sleeps() {
	ctl idle stats workers | python3 -c \
		'import json,sys; print(sum(w["idle_sleeps"] for w in json.load(sys.stdin)["workers"]))'
}

log "a subscriber, then $ROUNDS publishes each after an idle period"
ip netns exec "$NS" "$SUB" -a "$BROKER" -c c -n $ROUNDS it > "$TMP/out.txt" 2> "$TMP/sub.log" &
SUBPID=$!
PIDS+=("$SUBPID")
for r in $(seq $ROUNDS); do
	sleep 1.5	# longer than the longest block (100 ms) and the deep idle (200 ms)
	echo "after idle $r" | in_ns "$NS" "$PUB" -a "$BROKER" -q it ||
		fail "publish $r after an idle period not acknowledged"
	await_lines "$TMP/out.txt" "$r" || fail "message $r not delivered: $(cat "$TMP/sub.log")"
done
wait "$SUBPID" || fail "sluice-sub exited with $?"
seq -f "after idle %g" 1 $ROUNDS | cmp - "$TMP/out.txt" || fail "delivered: $(cat "$TMP/out.txt")"
log "$ROUNDS messages answered and delivered after idle periods"

log "a command to the idle worker"
sleep 1
ctl idle topic create made 1 > /dev/null || fail "topic create while idle"
echo "to the new topic" | in_ns "$NS" "$PUB" -a "$BROKER" -q made || fail "publish to made"

log "an idle worker blocks"
before=$(idle_sleeps) || fail "stats workers"
sleep 2
after=$(idle_sleeps) || fail "stats workers"
log "idle wake-ups in 2 s: $(( after - before )) (adaptive: about one a millisecond)"
[ $(( after - before )) -lt 200 ] || fail "$(( after - before )) idle wake-ups in 2 s"

if [ "$PORT" = tap ]; then
	# net_tap asks for a signal per received frame; sl-sigio takes them, so the control
	# thread (the main thread) wakes for its 10 ms tick and commands, not per frame
	log "net_tap's frame signals do not wake the control thread"
	wakes() {
		awk '/^voluntary_ctxt_switches/ {print $2}' \
			"/proc/$SLUICED_PID/task/$SLUICED_PID/status"
	}
	w0=$(wakes)
	seq 20000 | in_ns "$NS" "$PUB" -a "$BROKER" -q it || fail "20,000 publishes"
	w1=$(wakes)
	log "control thread wake-ups over 20,000 publishes: $(( w1 - w0 ))"
	[ $(( w1 - w0 )) -lt 1000 ] ||
		fail "the control thread woke $(( w1 - w0 )) times over 20,000 frames"
fi

log "clean shutdown"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
[ -e "$TMP/idle.sock" ] && fail "control socket left behind"
log "PASS"
