#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# For the NSQ gateway tests: a sluiced on net_tap in a namespace this test creates, and
# sluice-nsqd in the same namespace reaching it over kernel UDP, on nsqd's and
# nsqlookupd's usual ports (the namespace has its own). Sourced after lib.sh (a cluster
# test sets its own NS after sourcing this). Sets NS, BROKER, GW_PID; NSQD_TCP,
# NSQD_HTTP, LOOKUPD_HTTP are 127.0.0.1:PORT.

NSQD=${SLUICE_NSQD:-$BUILD/tools/nsqd/sluice-nsqd}	# another gateway binary: before/after runs
NS=sl-nsq-$$
IF=slnsq$$
IF=${IF:0:15}
BROKER=10.78.$(( $$ % 200 )).2
HOST=10.78.$(( $$ % 200 )).1
NSQD_TCP=127.0.0.1:4150
NSQD_HTTP=127.0.0.1:4151
LOOKUPD_HTTP=127.0.0.1:4161
NSQJS_VERSION=0.13.0
NSQJS_CACHE=$BUILD/nsqjs-cache

# need_nsqjs: nsqjs (pinned) installed once into build/nsqjs-cache (npm's cache beside
# it), so reruns are offline; exits 77 (skip) when node is missing, or when nsqjs is not
# there and npm cannot reach its registry.
need_nsqjs() {
	command -v node > /dev/null || { log "SKIP: node not installed"; exit 77; }
	[ "$(cat "$NSQJS_CACHE/.version" 2>/dev/null)" = "$NSQJS_VERSION" ] && return 0
	log "npm install nsqjs@$NSQJS_VERSION into $NSQJS_CACHE"
	mkdir -p "$NSQJS_CACHE"
	if ! npm install --prefix "$NSQJS_CACHE" --cache "$NSQJS_CACHE/.npm" --no-audit \
		--no-fund "nsqjs@$NSQJS_VERSION" > "$TMP/npm.log" 2>&1; then
		cat "$TMP/npm.log"
		log "SKIP: npm could not install nsqjs (registry unreachable?)"
		exit 77
	fi
	echo "$NSQJS_VERSION" > "$NSQJS_CACHE/.version"
}

# start_gw SLUICE_ADDRS LOOKUPD_HTTP: sluice-nsqd in $NS on $NSQD_TCP and $NSQD_HTTP in
# front of the sluiced node(s) SLUICE_ADDRS (comma separated), its lookupd API on
# LOOKUPD_HTTP ("" for none); returns once it serves. Sets GW_PID.
start_gw() {
	local i
	rm -f "$TMP/gw.ready"
	ip netns exec "$NS" "$NSQD" --sluice "$1" --tcp-address "$NSQD_TCP" \
		--http-address "$NSQD_HTTP" --lookupd-http-address "$2" \
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

# start_nsq_stack [SLUICED_ARGS...]
start_nsq_stack() {
	make_netns "$NS"
	start_sluiced nsq "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--auto-create=2 --log-mb 8 "$@"
	in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
	start_gw "$BROKER" "$LOOKUPD_HTTP"
}

# run_nsqjs TOPIC COUNT: nsqjs_e2e.js in $NS through the gateway (Writer on $NSQD_TCP,
# Reader discovering it through $LOOKUPD_HTTP)
run_nsqjs() {
	log "nsqjs $NSQJS_VERSION: Writer and lookupd-discovering Reader through sluice-nsqd"
	ip netns exec "$NS" node "$(dirname "$0")/nsqjs_e2e.js" "$NSQJS_CACHE/node_modules" \
		"$NSQD_TCP" "$LOOKUPD_HTTP" "$1" "$2" || fail "nsqjs end to end"
}

# mpub32_requests TOPIC: an HTTP /mpub of 32 messages of 32 bytes to TOPIC through the
# gateway ($NS, $NSQD_HTTP or GW_HTTP); prints how many sluice publishes the gateway sent
# for it (from its /metrics), or fails
mpub32_requests() {
	local http=${GW_HTTP:-$NSQD_HTTP} p0 p1 m0 m1 ans
	metric() {
		ip netns exec "$NS" curl -s --max-time 10 "http://$http/metrics" |
			awk -v n="$1" '$1 == n {print $2}'
	}
	p0=$(metric sluice_nsqd_sluice_publishes_total)
	m0=$(metric sluice_nsqd_sluice_published_messages_total)
	ans=$(python3 -c 'print("\n".join("m%030d" % i for i in range(32)))' |
		ip netns exec "$NS" curl -s --max-time 20 --data-binary @- \
			"http://$http/mpub?topic=$1")
	[ "$ans" = OK ] || fail "/mpub of 32 x 32 bytes to $1: $ans"
	p1=$(metric sluice_nsqd_sluice_publishes_total)
	m1=$(metric sluice_nsqd_sluice_published_messages_total)
	[ $((m1 - m0)) = 32 ] || fail "/mpub to $1: $((m1 - m0)) messages sent to sluice, not 32"
	echo $((p1 - p0))
}
