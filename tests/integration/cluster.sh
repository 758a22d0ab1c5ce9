#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Helpers for the tests of a three-node cluster (sourced after lib.sh): the nodes' net_tap
# ports on one Linux bridge inside a network namespace the test creates, so the nodes reach
# each other and the kernel-socket clients; the nodes take a cluster file (boot) or join
# through etcd (boot_etcd, after etcd_lib.sh). The replicated topic is `r`, one partition.
# The test sets NS and SUBNET (a.b.c: the bridge is .1, node ID is .1ID).

# make_bridge: the namespace and its bridge, and the cluster file: nodes 1, 2, 3, topic r
# with replicas 1,2,3, leader 1, all in the ISR. The bridge has no MAC of its own: it takes
# the lowest of its ports' (node 1's tap), and another when that tap goes (node 1 killed),
# so the clients in the namespace change next hop under their sessions (docs/protocol.md:
# deliveries follow a session's latest request).
make_bridge() {
	cat > "$TMP/cluster.conf" <<-CONF
	node 1 $SUBNET.11
	node 2 $SUBNET.12
	node 3 $SUBNET.13
	partition r 0 replicas=1,2,3 leader=1 isr=1,2,3
	CONF
	rm -f "$TMP/cluster.key"
	"$CTL" keygen "$TMP/cluster.key" || fail "sluicectl keygen"
	make_netns "$NS"
	in_ns "$NS" ip link add slbr0 type bridge || fail "bridge"
	in_ns "$NS" ip addr add "$SUBNET.1/24" dev slbr0 || fail "bridge address"
	in_ns "$NS" ip link set slbr0 up || fail "bridge up"
}

# boot_tap ID SLUICED_ARGS...: start sluiced node ID on tap ${TAP_PREFIX:-slr}<ID>$$
# (attached to the bridge) at $SUBNET.1<ID> with SLUICED_ARGS; NODE_PID[ID] is its PID
declare -A NODE_PID
boot_tap() {
	local id=$1 IF=${TAP_PREFIX:-slr}$1$$ i
	shift
	IF=${IF:0:15}
	start_sluiced "n$id" "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$SUBNET.1$id" \
		--node-id "$id" "$@"
	NODE_PID[$id]=$SLUICED_PID
	for i in $(seq 50); do
		in_ns "$NS" ip link show "$IF" > /dev/null 2>&1 && break
		sleep 0.1
	done
	# the kernel side of a tap has the DPDK port's MAC: give it its own, else the bridge
	# takes frames for the node as its own (a bridge port's address is local)
	in_ns "$NS" ip link set "$IF" address "02:00:00:00:0$id:01" || fail "tap $IF address"
	in_ns "$NS" ip link set "$IF" master slbr0 || fail "tap $IF to the bridge"
	in_ns "$NS" ip link set "$IF" up || fail "tap $IF up"
}

# boot ID [SLUICED_ARGS...]: boot_tap with the cluster file $TMP/cluster.conf and key
# $TMP/cluster.key
boot() {
	local id=$1
	shift
	boot_tap "$id" --cluster "$TMP/cluster.conf" --cluster-key "$TMP/cluster.key" "$@"
}

# boot_etcd ID [URL]: boot_tap with no cluster file: the node joins through etcd at URL
# (default $ETCD_URL, etcd_lib.sh's start_etcd) under the prefix $ETCD_PREFIX (default
# /sluice/t<PID>), key $TMP/cluster.key
boot_etcd() {
	boot_tap "$1" --etcd "${2:-$ETCD_URL}" --etcd-prefix "${ETCD_PREFIX:-/sluice/t$$}" \
		--cluster-key "$TMP/cluster.key"
}

# start_cluster: make_bridge, boot nodes 1, 2, 3, wait until the leader's ISR is 1,2,3
start_cluster() {
	local id
	make_bridge
	for id in 1 2 3; do
		boot $id
	done
	wait_isr 1,2,3
}

isr_of() {	# isr_of NODE: the ISR node NODE's view holds, e.g. "1,2,3"
	ctl "n$1" partition show r 0 | python3 -c '
import json, sys
print(",".join(str(x) for x in json.load(sys.stdin)["partitions"][0]["isr"]))'
}

# part_field NODE FIELD: a field of partition 0 of topic r in NODE's topic info
part_field() {
	ctl "n$1" topic info r | python3 -c '
import json, sys
print(json.load(sys.stdin)["partition_info"][0][sys.argv[1]])' "$2"
}

count_of() {	# count_of NODE: the messages NODE's log of r holds, up to its end
	part_field "$1" message_count
}

view_of() {	# view_of NODE: "leader epoch isr" of r/0 in NODE's view ("" if none)
	ctl "n$1" partition show r 0 2> /dev/null | python3 -c '
import json, sys
try:
    p = json.load(sys.stdin)["partitions"][0]
    print(p["leader"], p["epoch"], ",".join(str(x) for x in sorted(p["isr"])))
except Exception:
    print("")'
}

wait_view() {	# wait_view NODE PATTERN: until NODE's view matches the regex PATTERN
	local i v
	for i in $(seq 300); do
		v=$(view_of "$1")
		[[ "$v" =~ $2 ]] && return 0
		sleep 0.1
	done
	fail "node $1's view is '$v', not /$2/"
}

wait_isr() {	# wait_isr WANT [NODE]: until NODE's view (default 1, the leader) has ISR WANT
	local i got node=${2:-1}
	for i in $(seq 300); do
		got=$(isr_of "$node" | tr , '\n' | sort -n | paste -sd,)
		[ "$got" = "$1" ] && return 0
		sleep 0.1
	done
	fail "node $node's view has ISR $got, not $1"
}

# wait_counts: until the three nodes hold the same number of messages; sets c1 c2 c3
wait_counts() {
	local i
	for i in $(seq 300); do
		c1=$(count_of 1); c2=$(count_of 2); c3=$(count_of 3)
		[ "$c1" = "$c2" ] && [ "$c2" = "$c3" ] && return 0
		sleep 0.1
	done
	fail "message counts differ: $c1 $c2 $c3"
}

# same_logs ID...: after a clean stop, node 1's disk log of r/0 ($TMP/data1) against node
# ID's ($TMP/dataID), past each file's 64-byte header (it holds the file's creation time):
# the .msg files byte for byte; the .clog commit records (80 bytes, docs/storage.md) equal
# but for the producer tag of a record a replica caught up on after the sender's producer
# table had forgotten it (sent without its tag, docs/replication.md "Producer tags": 0 0
# there). Logs how many such records a node has; fails on any other difference.
same_logs() {
	local f b id u
	for f in "$TMP"/data1/r/0/*.msg "$TMP"/data1/r/0/*.clog; do
		b=$(basename "$f")
		for id in "$@"; do
			if [ "${b%.clog}" != "$b" ]; then
				u=$(clog_cmp "$f" "$TMP/data$id/r/0/$b" 2>&1) ||
					fail "node $id's $b differs from node 1's: $u"
				[ "$u" = 0 ] || log "node $id's $b: $u record(s) without their tag"
			elif ! cmp -s -i 64 "$f" "$TMP/data$id/r/0/$b"; then
				cmp -l -i 64 "$f" "$TMP/data$id/r/0/$b" | head -5
				ls -l "$TMP"/data*/r/0/
				fail "node $id's $b differs from node 1's"
			fi
		done
	done
}

clog_cmp() {	# clog_cmp A B: see same_logs; prints the records that differ by their tag
	python3 - "$1" "$2" <<'PY'
import sys
a, b = open(sys.argv[1], "rb").read()[64:], open(sys.argv[2], "rb").read()[64:]
if len(a) != len(b) or len(a) % 80:
    sys.exit("sizes %d and %d" % (len(a), len(b)))
untagged = 0
for i in range(0, len(a), 80):
    x, y = a[i:i + 80], b[i:i + 80]
    if x == y:
        continue
    if x[:56] != y[:56] or x[72:76] != y[72:76] or y[56:72] != bytes(16):
        sys.exit("record %d differs" % (i // 80))
    untagged += 1
print(untagged)
PY
}

# disk_cluster: make_bridge, nodes 1, 2, 3 with data directories $TMP/dataID (a test may
# mount one first), topic r with disk durability and 1 MiB segments, ISR 1,2,3
disk_cluster() {
	local id
	make_bridge
	for id in 1 2 3; do
		boot $id --data-dir "$TMP/data$id" --durability disk --segment-mb 1
	done
	wait_isr 1,2,3
}

# stop_compare: SIGTERM nodes 1, 2, 3 (each must exit 0), then same_logs 2 3
stop_compare() {
	local id
	log "stopping; the three disk logs compared (same_logs)"
	for id in 1 2 3; do
		stop_pid "${NODE_PID[$id]}" || fail "node $id exited with $? on SIGTERM"
	done
	same_logs 2 3
}
