#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A full disk on a follower of a replicated partition. Three sluiced nodes on one bridge
# (tests/integration/cluster.sh), topic r with disk durability, replicas 1,2,3; node 2's
# data directory is a 3 MiB tmpfs this test mounts. Checks: publishing to the leader goes
# on (every publish acknowledged: the leader drops node 2 from the ISR and commits with
# {1,3}, a majority); node 2's `storage status` says failed; once its filesystem is grown,
# `storage resume` on node 2 brings it back, it catches up and rejoins the ISR with no
# other step; after a clean stop the three nodes' disk logs are identical (same_logs: node
# 2's commit records may lack the producer tags its own table had forgotten when it handed
# its memory over again, as a caught-up replica's do).
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-fullf-$$
SUBNET=10.86.$(( $$ % 200 ))
TAP_PREFIX=slff
MNT=$TMP/data2
N=6000
small_fs "$MNT"

. "$(dirname "$0")/../integration/cluster.sh"

disk_cluster

PAD=$(printf '%0900d' 0)
seq -f "fol%06g-$PAD" 1 $N > "$TMP/in.txt"	# ~5.5 MB: more than node 2's 3 MiB

log "publishing $N messages of 900 bytes to the leader; node 2's disk fills"
in_ns "$NS" "$PUB" -a "$SUBNET.11" -A "$TMP/acked.txt" r < "$TMP/in.txt" \
	2> "$TMP/pub1.log" || fail "a publish failed: $(cat "$TMP/pub1.log")"
[ "$(wc -l < "$TMP/acked.txt")" = $N ] || fail "not all $N acknowledged"
storage_failed n2 r
wait_isr 1,3
log "all $N acknowledged; the leader commits with ISR 1,3"

log "grow node 2's filesystem, resume it; it catches up and rejoins"
mount -o remount,size=64m "$MNT" || fail "remount"
ctl n2 storage resume r > "$TMP/resume.json" 2>&1 || fail "resume: $(cat "$TMP/resume.json")"
wait_isr 1,2,3
wait_counts
[ "$c1" = $N ] || fail "the leader holds $c1 messages, not $N"
in_ns "$NS" "$SUB" -a "$SUBNET.11" -c check -n "$N" -t 30 --from-start r \
	> "$TMP/out.txt" 2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
cmp -s "$TMP/in.txt" "$TMP/out.txt" || fail "the leader's log is not the $N messages in order"

stop_compare
log "PASS"
