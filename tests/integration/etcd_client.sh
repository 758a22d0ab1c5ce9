#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The etcd v3 client (control/etcd.c) against a real etcd on loopback: put, range, prefix,
# txn compare-and-swap (success and failure), lease expiry and keep-alive, watch order,
# an endpoint list whose first endpoint is dead, the response size bound.
# Skipped (77) without etcd-server.

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd_lib.sh"
skip_without_etcd

start_etcd e1
log "etcd at $ETCD_URL"
DEAD=http://127.0.0.1:$(free_port)
"$BUILD/tests/integration/etcd_client" "$ETCD_URL" "$DEAD" > "$TMP/client.log" 2>&1
rc=$?
cat "$TMP/client.log"
[ $rc -eq 0 ] || fail "etcd_client failed"
log "PASS"
