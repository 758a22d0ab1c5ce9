#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# One node holds 2,000 partitions (2 topics x 1,000) at the default --log-mb 64 without a
# data directory, and 400 with one (memory durability: a sparse memlog file each), and
# an idle partition costs at most 160 KiB of resident memory (VmRSS + HugetlbPages growth
# over the creation and two admin snapshots, divided by the partitions; measured about
# 25 KiB for the partition itself and 11 KiB for its two admin snapshot slots). Before the
# logs grew on demand each partition reserved its whole --log-mb: 2,000 x 64 MiB does not
# fit on a CI machine and the creation is refused. Publish and consume still work on the
# last partition.
. "$(dirname "$0")/lib.sh"

NS=sl-scale-$$
IF=slsc$$
IF=${IF:0:15}
BROKER=10.83.$(( $$ % 200 )).2
HOST=10.83.$(( $$ % 200 )).1
BOUND_KIB=160	# without a data directory
BOUND_DATA_KIB=512	# with one: the store (disk log, buffers) measured about 225 KiB
make_netns "$NS"

mem_kib() {	# VmRSS + HugetlbPages of PID, KiB
	awk '/^VmRSS:|^HugetlbPages:/ {s += $2} END {print s}' "/proc/$1/status"
}

run() {	# run NAME PER_TOPIC [SLUICED_ARGS...]: 2 topics of PER_TOPIC partitions
	local name=$1 k=$2 t before after per bound=$BOUND_KIB
	shift 2
	[ "$name" = data ] && bound=$BOUND_DATA_KIB
	start_sluiced "$name" "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--max-topics 4 "$@"
	in_ns "$NS" ip addr add "$HOST/24" dev "$IF" 2>/dev/null
	in_ns "$NS" ip link set "$IF" up || fail "link up"
	sleep 2
	before=$(mem_kib "$SLUICED_PID")
	for t in a b; do
		ctl "$name" topic create "$t" "$k" > "$TMP/create.out" 2>&1 ||
			fail "$name: topic create $t ($k partitions): $(cat "$TMP/create.out")"
	done
	ctl "$name" topic list > "$TMP/list.json" || fail "topic list"
	python3 - "$TMP/list.json" "$k" <<'PY' || fail "$name: topics: $(cat "$TMP/list.json")"
import json, sys
d = json.load(open(sys.argv[1]))
topics = d["topics"] if isinstance(d, dict) else d
n = sum(t["partitions"] for t in topics if t["name"] in ("a", "b"))
assert n == 2 * int(sys.argv[2]), n
PY
	sleep 3	# two admin snapshots: they grow with the partitions too
	after=$(mem_kib "$SLUICED_PID")
	per=$(( (after - before) * 1024 / (2 * k) ))	# bytes per partition
	log "$name: $(( 2 * k )) partitions, memory $before KiB -> $after KiB:" \
		"$per bytes per idle partition (bound $(( bound * 1024 )))"
	[ "$per" -le $(( bound * 1024 )) ] ||
		fail "$name: an idle partition costs $per bytes (> $bound KiB)"
	seq -f "s%05g" 1 500 > "$TMP/in.txt"
	in_ns "$NS" "$PUB" -a "$BROKER" -P $(( k - 1 )) -b 8 -q b < "$TMP/in.txt" 2> "$TMP/pub.err" ||
		fail "$name: publish b/$(( k - 1 )): $(cat "$TMP/pub.err")"
	in_ns "$NS" "$SUB" -a "$BROKER" -P $(( k - 1 )) -c t --from-start -n 500 -t 20 b \
		> "$TMP/out.txt" 2> "$TMP/sub.err"
	cmp -s "$TMP/in.txt" "$TMP/out.txt" ||
		fail "$name: consumed $(wc -l < "$TMP/out.txt") of 500 on b/$(( k - 1 )): $(cat "$TMP/sub.err")"
	stop_pid "$SLUICED_PID" || fail "$name: sluiced exited with an error"
}

log "memory only"
run mem 1000
# with a data directory a topic of 1,000 partitions takes longer to create than
# sluicectl waits for a reply (files and directories synced per partition): 2 x 200
log "data directory, memory durability"
run data 200 --data-dir "$TMP/data" --durability memory
n=$(find "$TMP/data" -name memlog | wc -l)
[ "$n" = 400 ] || fail "$n memlog files, not 400"
du_kib=$(du -sk "$TMP/data" | cut -f1)
log "data directory: $du_kib KiB on disk for 400 partitions"
log "PASS"
