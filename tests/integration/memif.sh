#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# sluiced serving a net_memif port (shared memory, no kernel on the path), driven by a DPDK
# client process built on libsluice's DPDK transport (memif_client.c). Then SIGTERM: the
# broker must exit 0 and leave no socket, runtime directory or hugepage file behind.
. "$(dirname "$0")/lib.sh"

N=${MEMIF_MESSAGES:-10000}
SOCK=$TMP/memif-data.sock
# two workers, one RX queue (memif has no RSS): partition 1 belongs to worker 1, so every
# request for it is received by worker 0 and forwarded through the dispatch ring
start_sluiced memif "" "--lcores 0@0,1@1,2@1,3@0" -- --port "net_memif0,role=server,id=0,socket=$SOCK,socket-abstract=no" \
	--ip 10.78.0.2 --topic mt:2

log "DPDK client over memif: $N pipelined publishes, MPUB, subscribe, REQ, ordered"
# shellcheck disable=SC2086
"$BUILD/tests/integration/memif_client" --no-pci --lcores 0@0 ${SLUICE_EAL_MEM:---no-huge -m 512} \
	--file-prefix "sl-memifc-$$" \
	--vdev "net_memif0,role=client,id=0,socket=$SOCK,socket-abstract=no" \
	--log-level=lib.eal:warning -- 10.78.0.2 10.78.0.1 mt "$N" 1 > "$TMP/client.log" 2>&1
rc=$?
cat "$TMP/client.log" | grep -v '^EAL' | tail -n 20
[ $rc -eq 0 ] || fail "memif_client exited with $rc"

ctl memif stats workers > "$TMP/stats.json" || fail "stats"
grep -q '"arp_replies": [1-9]' "$TMP/stats.json" || fail "the client never resolved us by ARP"
grep -q '"forwarded_out": [1-9]' "$TMP/stats.json" || fail "nothing was dispatched to worker 1"

stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
[ -e "$TMP/memif.sock" ] && fail "control socket left behind"
[ -d "/var/run/dpdk/sl-memif-$$" ] && fail "DPDK runtime directory left behind"
log "PASS"
