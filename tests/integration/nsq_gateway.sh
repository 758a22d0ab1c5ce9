#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# sluice-nsqd in front of a real sluiced: every NSQ TCP protocol V2 frame and error case,
# and the nsqd and nsqlookupd HTTP APIs, checked over raw sockets (nsq_proto.py), and the
# gateway's Prometheus /metrics (values checked there; the format by `promtool check
# metrics` when the Debian package prometheus is installed). Then a clean shutdown of the
# gateway on SIGTERM. An NSQ MPUB of 32 x 32 bytes leaves as one sluice MPUB (META v2).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsq_lib.sh"

start_nsq_stack
log "raw NSQ protocol checks against sluice-nsqd -> sluiced $BROKER"
ip netns exec "$NS" python3 "$(dirname "$0")/nsq_proto.py" "$NSQD_TCP" "$NSQD_HTTP" \
	"$LOOKUPD_HTTP" "$TMP/metrics.txt" || fail "nsq_proto.py"
if command -v promtool > /dev/null; then
	promtool check metrics < "$TMP/metrics.txt" > "$TMP/promtool.log" 2>&1 ||
		fail "promtool check metrics: $(cat "$TMP/promtool.log")"
	log "promtool check metrics: accepted ($(grep -c '^# TYPE' "$TMP/metrics.txt") families)"
else
	log "SKIP promtool check: promtool not installed (Debian package prometheus)"
fi
# META v2 says the topic is not replicated: an NSQ MPUB of 32 x 32 bytes (2048 bytes of
# replica record, above a replicated topic's 1228) leaves as one sluice MPUB (two before)
ip netns exec "$NS" curl -s --max-time 10 -d first "http://$NSQD_HTTP/pub?topic=mp32" |
	grep -q OK || fail "/pub to mp32"
n=$(mpub32_requests mp32)
[ "$n" = 1 ] || fail "an MPUB of 32 x 32 bytes to an unreplicated topic: $n sluice requests, \
not 1"
log "MPUB of 32 x 32 bytes to an unreplicated topic: one sluice MPUB"
log "clean gateway shutdown"
stop_pid "$GW_PID" || fail "sluice-nsqd exited with $? on SIGTERM"
log "PASS"
