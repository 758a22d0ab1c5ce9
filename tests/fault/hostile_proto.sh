#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Hostile protocol input against live sluiced nodes on net_tap in a namespace (see
# hostile_proto.py): forged sources (no answer, drop_bad_source), SET_OFFSET extremes, a
# seq below the idempotency window, more than 131,072 small PUBs on a 16 MiB partition
# with a data directory, a consumer that is behind (memory only: temporary SL_E_FULL),
# the caps on channels created by SUB and their idle expiry, sessions bound to their source
# and limited per address.
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-hp-$$
NET=10.81.$(( $$ % 200 ))
BROKER=$NET.2
make_netns "$NS"

# a node's tap, up, with the kernel side at $NET.1 (and .3, .4 for other clients)
tap_up() {
	local ifc=$1
	in_ns "$NS" ip addr add "$NET.1/24" dev "$ifc" || fail "address"
	in_ns "$NS" ip addr add "$NET.3/24" dev "$ifc" || fail "address .3"
	in_ns "$NS" ip addr add "$NET.4/24" dev "$ifc" || fail "address .4"
	in_ns "$NS" ip link set "$ifc" up || fail "link up"
	in_ns "$NS" ping -c 1 -W 2 "$BROKER" > /dev/null || fail "broker unreachable"
}

# 1. a node with a data directory and 16 MiB partitions
IF=slhpa$$
IF=${IF:0:15}
start_sluiced hpdata "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER/24" \
	--data-dir "$TMP/data" --log-mb 16 --topic small:1 --topic so:1 --topic idem:1 --topic bundled:1
tap_up "$IF"
in_ns "$NS" python3 "$(dirname "$0")/hostile_proto.py" data "$BROKER" "$IF" "$CTL" \
	"$TMP/hpdata.sock" "$NET.1" "$NET.3" "$NET.4" || fail "hostile input (data directory)"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
# the same node again: channels created by SUB stay anonymous across the restart
start_sluiced hpdata2 "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER/24" \
	--data-dir "$TMP/data" --log-mb 16
in_ns "$NS" python3 "$(dirname "$0")/hostile_proto.py" restart "$BROKER" "$IF" "$CTL" \
	"$TMP/hpdata2.sock" "$NET.1" || fail "after the restart"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"

# 2. a node in memory only: back pressure, channels created by SUB
IF=slhpb$$
IF=${IF:0:15}
start_sluiced hpmem "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER/24" \
	--log-mb 1 --topic mem:1 --topic caps:1 --sub-channels 4 --sub-channels-per-source 2 \
	--sub-channel-idle-s 1 --max-sessions-per-source 8
tap_up "$IF"
in_ns "$NS" python3 "$(dirname "$0")/hostile_proto.py" mem "$BROKER" "$IF" "$CTL" \
	"$TMP/hpmem.sock" "$NET.1" "$NET.3" "$NET.4" || fail "hostile input (memory only)"
kill -0 "$SLUICED_PID" || fail "sluiced died"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
