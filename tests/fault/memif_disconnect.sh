#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A memif client that goes away must never crash the broker. sluiced serves a net_memif
# port (role server); MEMIF_CYCLES times (default 20) a DPDK client (memif_client.c in its flood mode) connects,
# opens a session, floods the port (32 jumbo frames per round, an MPUB of 32 every 8) and
# is SIGKILLed after a random 0-300 ms, or, every third cycle, ends on its own mid-flood.
# The DPDK memif PMD tears a connection down on its interrupt thread (memif_disconnect:
# link down, then munmap of the peer's regions) with nothing to keep a worker out of its
# receive burst; sluiced died of SIGSEGV in librte_net_memif that way (docs/architecture.md,
# "When a memif peer goes away"). After every cycle sluiced must be alive, its control
# socket must answer and the next client must get a session over the same port; at the end a
# full client run (memif_client) passes and SIGTERM exits 0.
#
# The worker shares CPU 0 with the main lcore (and so with DPDK's interrupt thread, which
# runs on the main lcore's CPU when the lcores take every CPU): the interrupt thread then
# preempts the worker wherever it is, often inside the receive burst, which makes the race
# frequent instead of rare. MEMIF_IDLE=busy makes the worker poll without sleeping (the
# reproduction; the suite runs adaptive, as every test must).
. "$(dirname "$0")/../integration/lib.sh"

CYCLES=${MEMIF_CYCLES:-20}
IDLE=${MEMIF_IDLE:-adaptive}
SOCK=$TMP/memif-data.sock
CLIENT=$BUILD/tests/integration/memif_client
VDEV="net_memif0,role=client,id=0,socket=$SOCK,socket-abstract=no"

start_sluiced memif "" "--lcores 0@0,1@0,2@1" -- \
	--port "net_memif0,role=server,id=0,socket=$SOCK,socket-abstract=no" \
	--ip 10.79.0.2 --topic ft:1 --topic mt:1 --idle "$IDLE"

killed=0
ended=0
for i in $(seq "$CYCLES"); do
	rounds=0
	[ $((i % 3)) -eq 0 ] && rounds=$((300 + RANDOM % 500))
	# the client always runs without hugepages: a SIGKILLed one leaves no page files. It
	# goes without closing anything, as a crashed one would: under ASan, no leak report
	# (whose exit status 1 would read as a failed client)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$CLIENT" --no-pci --lcores 0@1 --no-huge -m 256 --file-prefix "sl-flood$i-$$" \
		--vdev "$VDEV" --log-level=lib.eal:warning -- flood 10.79.0.2 10.79.0.1 ft "$rounds" \
		> "$TMP/flood$i.out" 2>&1 &
	fpid=$!
	PIDS+=("$fpid")
	for _ in $(seq 300); do
		grep -q '^flooding' "$TMP/flood$i.out" && break
		kill -0 "$fpid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q '^flooding' "$TMP/flood$i.out"; then
		kill -0 "$SLUICED_PID" 2>/dev/null || fail "cycle $i: sluiced died"
		tail -n 5 "$TMP/flood$i.out"
		fail "cycle $i: the client got no session over memif"
	fi
	if [ "$rounds" -eq 0 ]; then
		sleep "0.$(printf '%03d' $((RANDOM % 300)))"
		kill -KILL "$fpid" 2>/dev/null
		wait "$fpid" 2>/dev/null
		killed=$((killed + 1))
	else
		wait "$fpid"
		rc=$?
		[ $rc -eq 0 ] || { tail -n 5 "$TMP/flood$i.out"; fail "cycle $i: client exited $rc"; }
		ended=$((ended + 1))
	fi
	rm -rf "/var/run/dpdk/sl-flood$i-$$"
	kill -0 "$SLUICED_PID" 2>/dev/null || fail "cycle $i: sluiced died (client gone)"
	ctl memif stats workers > "$TMP/stats.json" || fail "cycle $i: control socket silent"
done
log "$CYCLES cycles ($killed killed, $ended ended mid-flood): sluiced alive"
grep -o '"rx_pkts": [0-9]*' "$TMP/stats.json" | head -n 1

log "a full client run over the same port (a fresh topic: it checks ids from 1)"
"$CLIENT" --no-pci --lcores 0@1 --no-huge -m 512 --file-prefix "sl-memifc-$$" \
	--vdev "$VDEV" --log-level=lib.eal:warning -- 10.79.0.2 10.79.0.1 mt 1000 \
	> "$TMP/client.log" 2>&1
rc=$?
grep -v '^EAL' "$TMP/client.log" | tail -n 5
[ $rc -eq 0 ] || fail "memif_client exited with $rc"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
