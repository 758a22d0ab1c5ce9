#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# For the NSQ gateway tests: a sluiced on net_tap in a namespace this test creates, and
# sluice-nsqd in the same namespace reaching it over kernel UDP, on nsqd's and
# nsqlookupd's usual ports (the namespace has its own). Sourced after lib.sh.
# Sets NS, BROKER, GW_PID; NSQD_TCP, NSQD_HTTP, LOOKUPD_HTTP are 127.0.0.1:PORT.

NSQD=${SLUICE_NSQD:-$BUILD/tools/nsqd/sluice-nsqd}	# another gateway binary: before/after runs
NS=sl-nsq-$$
IF=slnsq$$
IF=${IF:0:15}
BROKER=10.78.$(( $$ % 200 )).2
HOST=10.78.$(( $$ % 200 )).1
NSQD_TCP=127.0.0.1:4150
NSQD_HTTP=127.0.0.1:4151
LOOKUPD_HTTP=127.0.0.1:4161

# start_nsq_stack [SLUICED_ARGS...]
start_nsq_stack() {
	local i
	make_netns "$NS"
	start_sluiced nsq "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--auto-create=2 --log-mb 8 "$@"
	in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
	rm -f "$TMP/gw.ready"
	ip netns exec "$NS" "$NSQD" --sluice "$BROKER" --tcp-address "$NSQD_TCP" \
		--http-address "$NSQD_HTTP" --lookupd-http-address "$LOOKUPD_HTTP" \
		--ready-file "$TMP/gw.ready" > "$TMP/gw.log" 2>&1 &
	GW_PID=$!
	PIDS+=("$GW_PID")
	for i in $(seq 300); do
		[ -s "$TMP/gw.ready" ] && return 0
		kill -0 "$GW_PID" 2>/dev/null || fail "sluice-nsqd exited during start"
		sleep 0.1
	done
	fail "sluice-nsqd not ready after 30 s"
}
