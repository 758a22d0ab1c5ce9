#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A real NSQ client, nsqjs from npm (pinned), unchanged, against sluice-nsqd in front of
# a real sluiced: publish (PUB, MPUB), discovery through the lookupd API, consume with
# RDY > 1, TOUCH, REQ (redelivered with attempts + 1), FIN (nsqjs_e2e.js). nsqjs is
# installed once into build/nsqjs-cache (npm's cache beside it), so reruns are offline;
# skipped (77) only when it is not there and npm cannot reach its registry.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nsq_lib.sh"

NSQJS_VERSION=0.13.0
CACHE=$BUILD/nsqjs-cache
command -v node > /dev/null || { log "SKIP: node not installed"; exit 77; }
if [ "$(cat "$CACHE/.version" 2>/dev/null)" != "$NSQJS_VERSION" ]; then
	log "npm install nsqjs@$NSQJS_VERSION into $CACHE"
	mkdir -p "$CACHE"
	if ! npm install --prefix "$CACHE" --cache "$CACHE/.npm" --no-audit --no-fund \
		"nsqjs@$NSQJS_VERSION" > "$TMP/npm.log" 2>&1; then
		cat "$TMP/npm.log"
		log "SKIP: npm could not install nsqjs (registry unreachable?)"
		exit 77
	fi
	echo "$NSQJS_VERSION" > "$CACHE/.version"
fi

start_nsq_stack
log "nsqjs $NSQJS_VERSION: Writer and lookupd-discovering Reader through sluice-nsqd"
ip netns exec "$NS" node "$(dirname "$0")/nsqjs_e2e.js" "$CACHE/node_modules" "$NSQD_TCP" \
	"$LOOKUPD_HTTP" nsqjs_topic 2000 || fail "nsqjs end to end"
stop_pid "$GW_PID" || fail "sluice-nsqd exited with $? on SIGTERM"
log "PASS"
