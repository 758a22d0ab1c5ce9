#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A full disk, for real: the data directory is a 3 MiB tmpfs this test mounts. A topic with
# disk durability is published to until the filesystem is full. Checks: the publisher gets
# a clear ERR (storage I/O error), later publishes are refused with the same error (the
# error is sticky), `storage status` names the cause, every acknowledged message is still
# delivered, and once the filesystem is grown (remount) `storage resume` brings the
# partition back: publishing works again and no acknowledged message is lost or doubled, and
# no publish answered with the error was kept (its client would publish it twice).
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-full-$$
IF=slfull$$
IF=${IF:0:15}
BROKER=10.81.$(( $$ % 200 )).2
HOST=10.81.$(( $$ % 200 )).1
MNT=$TMP/data
small_fs "$MNT"

make_netns "$NS"
start_sluiced full "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
	--data-dir "$MNT" --topic full:1:disk --segment-mb 1
in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"

PAD=$(printf '%0900d' 0)
seq -f "full%06g-$PAD" 1 20000 > "$TMP/in.txt"	# ~18 MB: far more than fits

log "publishing until the disk is full"
: > "$TMP/acked.txt"
in_ns "$NS" "$PUB" -a "$BROKER" -A "$TMP/acked.txt" full < "$TMP/in.txt" 2> "$TMP/pub1.log" &&
	fail "every publish succeeded on a 3 MiB filesystem"
grep -q "storage I/O error" "$TMP/pub1.log" ||
	fail "no storage error reported: $(cat "$TMP/pub1.log")"
ACKED=$(wc -l < "$TMP/acked.txt")
[ "$ACKED" -gt 100 ] || fail "only $ACKED acknowledged before the disk was full"
log "$ACKED acknowledged, then: $(grep -m1 failed "$TMP/pub1.log")"

storage_failed full full

log "sticky: a new publish is refused with the same error"
echo "after the failure" | in_ns "$NS" "$PUB" -a "$BROKER" full 2> "$TMP/pub2.log" &&
	fail "a publish succeeded on a failed store"
grep -q "storage I/O error" "$TMP/pub2.log" || fail "pub2: $(cat "$TMP/pub2.log")"
log "resume refused while the disk is still full"
ctl full storage resume full > "$TMP/resume1.json" 2>&1 && {
	# space may have been freed by the cut back to the durable end: then it is fine
	log "resume succeeded at once (the cut freed enough space)"
}

log "grow the filesystem, resume"
mount -o remount,size=64m "$MNT" || fail "remount"
ctl full storage resume full > "$TMP/resume2.json" || fail "resume: $(cat "$TMP/resume2.json")"
ctl full storage status full | grep -q '"state": "ok"' || fail "not ok after resume"
tail -n +$((ACKED + 1)) "$TMP/in.txt" | head -n 500 > "$TMP/in3.txt"
in_ns "$NS" "$PUB" -a "$BROKER" full < "$TMP/in3.txt" 2> "$TMP/pub3.log" ||
	fail "publish after resume: $(cat "$TMP/pub3.log")"

log "every acknowledged message is delivered once, in order"
M=$(ctl full topic info full | python3 -c 'import json, sys
print(json.load(sys.stdin)["partition_info"][0]["message_count"])')
in_ns "$NS" "$SUB" -a "$BROKER" -c check -i -n "$M" -t 30 --from-start full > "$TMP/out.txt" \
	2> "$TMP/sub.log" || fail "sluice-sub: $(cat "$TMP/sub.log")"
python3 - "$TMP" <<'PY' || fail "content"
import sys
t = sys.argv[1]
sent = open(t + "/in.txt").read().split("\n")
lines = [l.split(" ", 1) for l in open(t + "/out.txt").read().split("\n")[:-1]]
got = [b for _, b in lines]
ids = {}
for i, b in lines:
    ids.setdefault(b, []).append(int(i))
twice = {b[:12]: v for b, v in ids.items() if len(v) > 1}
assert not twice, "delivered twice (body: ids): %s" % list(twice.items())[:5]
acked = [int(x) for x in open(t + "/acked.txt").read().split()]
later = open(t + "/in3.txt").read().split("\n")[:-1]
have = set(got)
lost = [a for a in acked if sent[a - 1] not in have]
assert not lost, "acknowledged but lost: %s" % lost[:5]
assert all(l in have for l in later), "a message published after resume is missing"
assert got[-len(later):] == later, "the messages after resume are not last and in order"
# a publish answered with an error is not kept (its client publishes it again)
before = got[:len(got) - len(later)]
ack_bodies = set(sent[a - 1] for a in acked)
kept = [sent.index(b) + 1 for b in before if b not in ack_bodies]
assert not kept, "answered with an error but kept: lines %s" % kept[:5]
print("%d delivered: all %d acknowledged before the failure and %d after resume" %
      (len(got), len(acked), len(later)))
PY
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
