#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Nodes joined by memif links stopped together, as when a host's nodes are stopped at once:
# each must exit 0. Three nodes, as tools/bench/run's memif replication rows: node 1 (the
# leader of topic `r`, replicas 1,2,3, ISR of all three) is the memif server of three links,
# one to a DPDK client (sluice-bench over memif) and one to each follower. STOP_CYCLES times
# (default 3): the nodes start, the client publishes STOP_N messages (every one answered,
# none refused), then all three get SIGTERM in the same instant.
# A follower's memif interrupt thread then tears its link down (the leader went away) while
# its control thread closes the same port, and the PMD does not serialise the two: sluiced's
# unmap guard made the interrupt thread's munmap of the peer's regions wait for an RCU grace
# period that the stopping control thread held up, and it unmapped them again after
# rte_eal_cleanup() had mapped libgcc_s into the freed range: SIGSEGV at exit in 3 of 6 runs
# (2026-11-28; dataplane/port.c, "memif peers that go away"). Now the close stops a memif
# port on the interrupt thread, after any disconnect there.
. "$(dirname "$0")/../integration/lib.sh"

CYCLES=${STOP_CYCLES:-3}
N=${STOP_N:-100000}
BENCH=$BUILD/tools/bench/sluice-bench
M=role=server,id=0,socket-abstract=no,bsize=9216
# the nodes' lcores: the leader's worker on CPU 1, both followers' on CPU 0 (the bench's
# layout when the crash was found; the bench has since put node 3's worker on CPU 1)
EAL_BASE=$(sed -E 's/--lcores [^ ]+//' <<< "$SLUICE_EAL")

cat > "$TMP/cluster.conf" <<CONF
node 1 10.79.7.1
node 2 10.79.7.2
node 3 10.79.7.5
partition r 0 replicas=1,2,3 leader=1 isr=1,2,3
CONF
"$CTL" keygen "$TMP/cluster.key" || fail "sluicectl keygen"

for c in $(seq "$CYCLES"); do
	start_sluiced "n1c$c" "" "--lcores 0@0,1@1,2@0" -- \
		--port "net_memif0,$M,socket=$TMP/c.sock" --ip 10.79.0.2/24 \
		--port "net_memif1,$M,socket=$TMP/2.sock" --ip 10.79.7.1/30 \
		--port "net_memif2,$M,socket=$TMP/3.sock" --ip 10.79.7.1/24 \
		--node-id 1 --cluster "$TMP/cluster.conf" --cluster-key "$TMP/cluster.key" \
		--mtu 9000 --idle-max-us 50 --log-mb 64
	P1=$SLUICED_PID
	ip=(x x 10.79.7.2 10.79.7.5)
	P=()
	for id in 2 3; do
		start_sluiced "n${id}c$c" "" "--lcores 0@1,1@0,2@1" -- \
			--port "net_memif0,role=client,id=0,socket-abstract=no,bsize=9216,socket=$TMP/$id.sock" \
			--ip "${ip[$id]}/24" --node-id $id --cluster "$TMP/cluster.conf" \
			--cluster-key "$TMP/cluster.key" --mtu 9000 --idle-max-us 50 --log-mb 64
		P+=("$SLUICED_PID")
	done
	# shellcheck disable=SC2086
	"$BENCH" $EAL_BASE --lcores 0@0 --file-prefix "sl-stopc$c-$$" \
		--vdev "net_memif0,role=client,id=0,socket=$TMP/c.sock,socket-abstract=no,bsize=9216" \
		-- --xport dpdk -a 10.79.0.2 --local-ip 10.79.0.1 --mtu 9000 --client-idle-us 50 \
		--no-header --system sluice --topic r --partition 0 --workload pub --size 100 \
		--count "$N" --window 32 > "$TMP/bench$c.log" 2>&1 ||
		fail "cycle $c: sluice-bench exited with $?: $(tail -n 5 "$TMP/bench$c.log")"
	grep -q "^answers: $N acked, 0 refused full" "$TMP/bench$c.log" ||
		fail "cycle $c: not every publish acknowledged: $(grep '^answers' "$TMP/bench$c.log")"
	kill -TERM "$P1" "${P[@]}"
	for p in "$P1" "${P[@]}"; do
		wait "$p"
		rc=$?
		[ "$rc" -eq 0 ] || fail "cycle $c: a node (pid $p) exited with $rc when all stopped"
	done
	rm -rf /var/run/dpdk/sl-n?c"$c"-"$$" "/var/run/dpdk/sl-stopc$c-$$"
	log "cycle $c: $N acknowledged by RF=3, the three nodes stopped together, each exited 0"
done
log "PASS"
