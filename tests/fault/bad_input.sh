#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Bad input against a live sluiced on net_tap in a namespace: see bad_input.py.
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-bad-$$
IF=slbad$$
IF=${IF:0:15}
BROKER=10.79.$(( $$ % 200 )).2
HOST=10.79.$(( $$ % 200 )).1
make_netns "$NS"
start_sluiced bad "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" --topic bad:1 \
	--topic small:1 --log-mb 1
in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"
in_ns "$NS" ping -c 1 -W 2 "$BROKER" > /dev/null || fail "broker unreachable"
in_ns "$NS" python3 "$(dirname "$0")/bad_input.py" "$BROKER" "$IF" "$CTL" "$TMP/bad.sock" ||
	fail "bad input checks failed"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
