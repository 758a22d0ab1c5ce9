#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A machine crash under a `memory`-durability topic in a data directory (issue 12, point
# 6): the acknowledged messages that were not synced are lost, but their ids are never
# given to other bodies. sluiced on a net_tap port in a namespace this test creates, topic
# `mc` (durability memory, --sync ms:60000 so that the disk copy is well behind).
# A consumer prints every message with its id (sluice-sub -i) while sluice-pub -A
# publishes; once KILL_AT are acknowledged sluiced gets SIGKILL and the test makes what a
# machine crash leaves: the memory log file is another boot's (its boot id bytes
# rewritten, the header CRC made good) and the unsynced tail of the disk log is gone (the
# newest segment's message log cut to 1/100 of its size: with ms:60000 nothing after the
# start was synced, so any cut is a possible crash). sluiced restarts on the data
# directory and a second round is published. Checks:
#  (a) the start says which ids were recorded as lost;
#  (b) every id the consumer saw before the crash is, in a full read of the partition,
#      either absent or still the same body; no id names two bodies;
#  (c) every message of the second round has an id above every id seen before the crash;
#  (d) after a clean stop and another "reboot" (boot id rewritten again), the start
#      records no lost range (a clean close lowers the id mark) and ids continue.
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-mcrash-$$
IF=slmc$$
IF=${IF:0:15}
BROKER=10.81.$(( $$ % 200 )).2
HOST=10.81.$(( $$ % 200 )).1
DATA=$TMP/data
PART=$DATA/mc/0
N=200000
KILL_AT=60000
N2=20000

make_netns "$NS"
boot() {
	start_sluiced mc "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--data-dir "$DATA" --topic mc:1:memory --sync ms:60000 --log-mb 16 \
		--sub-channels 0 --sub-channels-per-source 0
	in_ns "$NS" ip addr replace "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
}

# other_boot: make the memory log file look written in another boot (bytes 48..59 of its
# header, CRC32C at 60 made good again), as after a machine crash and a reboot
other_boot() {
	python3 - "$PART/memlog" <<'PY' || fail "memlog header"
import sys
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF
p = sys.argv[1]
with open(p, "r+b") as f:
    h = bytearray(f.read(64))
    assert h[:8] == b"SLMEMRNG", h[:8]
    h[48:60] = bytes((x ^ 0x5A) for x in h[48:60])
    h[60:64] = crc32c(bytes(h[:60])).to_bytes(4, "little")
    f.seek(0)
    f.write(h)
PY
}

boot
seq -f "first line %06g" 1 $N > "$TMP/in1.txt"
ip netns exec "$NS" "$SUB" -a "$BROKER" -i -e -c watch --from-end mc \
	> "$TMP/seen1.txt" 2> "$TMP/watch1.log" &
SUBPID=$!
PIDS+=("$SUBPID")
publish_until "$NS" "$BROKER" mc "$TMP/in1.txt" "$TMP/acked1.txt" $KILL_AT -b 64
kill -KILL "$SLUICED_PID"
wait "$SLUICED_PID" 2>/dev/null
wait "$PUBPID" 2>/dev/null
kill -TERM "$SUBPID" 2>/dev/null
wait "$SUBPID"
log "$(wc -l < "$TMP/acked1.txt") acknowledged, $(wc -l < "$TMP/seen1.txt") seen before the kill"

# the machine crash: the page cache is gone
other_boot
SEG=$(ls "$PART"/*.msg | sort | tail -1)
SZ=$(stat -c %s "$SEG")
truncate -s $(( SZ / 100 + 64 )) "$SEG" || fail "truncate $SEG"
log "crash: memlog of another boot, $SEG cut from $SZ to $(( SZ / 100 + 64 )) bytes"

boot
grep -E "recorded as lost|lost range" "$TMP/mc.log" | sed "s/^/[$TEST_NAME] start: /"
grep -q "recorded as lost" "$TMP/mc.log" || fail "the start did not record a lost range"

seq -f "second line %06g" 1 $N2 > "$TMP/in2.txt"
in_ns "$NS" "$PUB" -a "$BROKER" -b 64 -A "$TMP/acked2.txt" mc < "$TMP/in2.txt" \
	> /dev/null 2> "$TMP/pub2.log" || fail "second round: $(cat "$TMP/pub2.log")"

# (d) a clean stop, a reboot: no lost range, ids continue
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
other_boot
boot
grep -q "recorded as lost" "$TMP/mc.log" &&
	fail "a clean stop then a reboot recorded a lost range: $(grep 'recorded as lost' "$TMP/mc.log")"
seq -f "third line %06g" 1 100 > "$TMP/in3.txt"
in_ns "$NS" "$PUB" -a "$BROKER" -A "$TMP/acked3.txt" mc < "$TMP/in3.txt" \
	> /dev/null 2> "$TMP/pub3.log" || fail "third round: $(cat "$TMP/pub3.log")"

ctl mc topic info mc > "$TMP/info.json" || fail "topic info"
read -r M END < <(python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["partition_info"][0]
print(p["message_count"], p.get("end_id", 0))' "$TMP/info.json")
log "partition: message_count $M"
# the messages held: round 1's that survived, round 2, round 3 (a full read from the start
# crosses the lost range)
in_ns "$NS" "$SUB" -a "$BROKER" -i -c all -t 10 --from-start mc \
	> "$TMP/final.txt" 2> "$TMP/final.log" || true
python3 - "$TMP" "$(dirname "$0")/../integration" <<'PY' || fail "content check"
import sys
tmp = sys.argv[1]

sys.path.insert(0, sys.argv[-1])
from slproto import sub_pairs as pairs  # noqa: E402

seen = pairs(tmp + "/seen1.txt")
final = pairs(tmp + "/final.txt")
errs = []
assert seen, "the consumer saw nothing before the kill"
top = max(i for i, _ in seen)
fin = {}
for i, b in final:
    fin.setdefault(i, set()).add(b)
reused = [(i, b, sorted(fin[i])) for i, b in seen if i in fin and fin[i] != {b}]
two = [i for i, bs in fin.items() if len(bs) > 1]
r1 = [i for i, b in final if b.startswith("first ")]
r2 = [i for i, b in final if b.startswith("second ")]
r3 = [i for i, b in final if b.startswith("third ")]
print("seen before the crash: %d ids, up to %d; read back: %d of round 1, %d of round 2 "
      "(ids %s..%s), %d of round 3" % (len(seen), top, len(r1), len(r2),
      min(r2) if r2 else "-", max(r2) if r2 else "-", len(r3)))
if len(r1) >= top:
    errs.append("test setup: the crash kept %d messages, the consumer saw ids up to %d "
                "only: nothing to check" % (len(r1), top))
if reused:
    errs.append("%d ids seen before the crash now name another body, e.g. id %d was %r, "
                "now %r" % (len(reused), reused[0][0], reused[0][1], reused[0][2]))
if two:
    errs.append("%d ids name two bodies" % len(two))
low = [i for i in r2 + r3 if i <= top]
if low:
    errs.append("%d new messages got ids at or below %d (seen before the crash), "
                "first %d" % (len(low), top, min(low)))
acked2 = len(open(tmp + "/acked2.txt").read().split())
if len(r2) != acked2 or len(r3) != 100:
    errs.append("read back %d of %d acknowledged in round 2, %d of 100 in round 3" %
                (len(r2), acked2, len(r3)))
if r2 and r3 and min(r3) <= max(r2):
    errs.append("round 3 ids (from %d) not above round 2's (to %d)" % (min(r3), max(r2)))
if errs:
    print("\n".join(errs))
    sys.exit(1)
PY

log "clean shutdown"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
