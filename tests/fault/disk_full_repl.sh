#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A full disk on the leader of a replicated partition. Three sluiced nodes on one bridge
# (tests/integration/cluster.sh), topic r with disk durability, replicas 1,2,3; the leader's
# data directory is a 3 MiB tmpfs this test mounts, the followers' are plain directories.
# Published to until the leader's filesystem is full. Checks: a publish after the failure
# gets the storage error (sticky), one taken before it an answer or a time-out, never the
# error; once the filesystem is grown, `storage resume` on the leader brings the partition
# back and publishing works again (before the fix the leader's log had been cut below its
# replication state and every publish got "inconsistent publish arguments"); the leader's
# log holds every acknowledged message once, in order, nothing answered with the error;
# after a clean stop the three nodes' disk logs are identical (same_logs: the records
# memory handed over again on resume are the ones the replicas hold).
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-fullr-$$
SUBNET=10.85.$(( $$ % 200 ))
TAP_PREFIX=slfr
MNT=$TMP/data1
small_fs "$MNT"

. "$(dirname "$0")/../integration/cluster.sh"

disk_cluster

PAD=$(printf '%0900d' 0)
seq -f "repl%06g-$PAD" 1 20000 > "$TMP/in.txt"	# ~18 MB: far more than fits

log "publishing to the leader until its disk is full"
: > "$TMP/acked.txt"
in_ns "$NS" "$PUB" -a "$SUBNET.11" -A "$TMP/acked.txt" r < "$TMP/in.txt" \
	2> "$TMP/pub1.log" && fail "every publish succeeded on a 3 MiB filesystem"
ACKED=$(wc -l < "$TMP/acked.txt")
[ "$ACKED" -gt 100 ] || fail "only $ACKED acknowledged before the disk was full"
FIRST=$(grep -m1 "failed" "$TMP/pub1.log")
log "$ACKED acknowledged, then: $FIRST"
# a publish the leader had taken before the failure waits (its replicas may hold it; it is
# written on resume): its client sees a time-out, an unknown outcome, never an error
case "$FIRST" in
*"storage I/O error"* | *"timed out"*) ;;
*) fail "pub1: $(cat "$TMP/pub1.log")" ;;
esac
echo "after the failure" | in_ns "$NS" "$PUB" -a "$SUBNET.11" r 2> "$TMP/pub2.log" &&
	fail "a publish succeeded on a failed store"
grep -q "storage I/O error" "$TMP/pub2.log" || fail "pub2: $(cat "$TMP/pub2.log")"
storage_failed n1 r

log "grow the leader's filesystem, resume"
mount -o remount,size=64m "$MNT" || fail "remount"
ctl n1 storage resume r > "$TMP/resume.json" 2>&1 || fail "resume: $(cat "$TMP/resume.json")"
ctl n1 storage status r | grep -q '"state": "ok"' || fail "not ok after resume"
sed -n 10001,10300p "$TMP/in.txt" > "$TMP/in3.txt"	# beyond what pub1 had in flight
in_ns "$NS" "$PUB" -a "$SUBNET.11" r < "$TMP/in3.txt" 2> "$TMP/pub3.log" ||
	fail "publish after resume: $(cat "$TMP/pub3.log")"
wait_isr 1,2,3

log "the leader's log"
wait_counts
in_ns "$NS" "$SUB" -a "$SUBNET.11" -c check -i -n "$c1" -t 30 --from-start r \
	> "$TMP/out1.txt" 2> "$TMP/sub1.log" || fail "sluice-sub: $(cat "$TMP/sub1.log")"
python3 - "$TMP" "$FIRST" <<'PY' || fail "content"
import re, sys
t, first = sys.argv[1], sys.argv[2]
sent = open(t + "/in.txt").read().split("\n")[:-1]
lines = [l.split(" ", 1) for l in open(t + "/out1.txt").read().split("\n")[:-1]]
got = [b for _, b in lines]
acked = sorted(int(x) for x in open(t + "/acked.txt").read().split())
later = open(t + "/in3.txt").read().split("\n")[:-1]
assert got[-len(later):] == later, "the messages after resume are not last and in order"
before = got[:len(got) - len(later)]
# what pub1 published: a prefix of its input, holding every acknowledged line
assert before == sent[:len(before)], "pub1's messages are not its first lines, once, in order"
assert acked == list(range(1, len(acked) + 1)), "pub1's acknowledgements have a gap"
assert len(before) >= len(acked), "acknowledged but lost: lines %d.." % (len(before) + 1)
m = re.search(r"line (\d+) failed: storage I/O error", first)
assert not m or len(before) < int(m.group(1)), \
    "line %s answered with the storage error but kept" % (m and m.group(1))
print("leader: %d messages: all %d acknowledged, %d taken before the failure and written on "
      "resume, %d after resume" % (len(got), len(acked), len(before) - len(acked), len(later)))
PY
stop_compare
log "PASS"
