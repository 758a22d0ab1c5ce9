#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Crash and restart with disk durability, real processes and real files: sluiced on a
# net_tap port in a namespace this test creates, topic `crash` with durability disk in a
# data directory under the test's temp dir.
#  1. 2,000 messages published and acknowledged; channel c1 consumes 1,000 of them, and
#     the test waits until the position is in the channel file on disk.
#  2. 100,000 more are published (sluice-pub -A logs each acknowledged line); once 20,000
#     are acknowledged, sluiced gets SIGKILL.
#  3. sluiced restarts on the same data directory. Checks: recovery is reported by
#     `sluicectl storage status`; channel c1 came back at 1,000; c1 then receives exactly
#     the messages after it; a new channel from the start receives every message once, in
#     order, and every acknowledged one is there; positions by offset and time older than
#     memory are found on disk.
. "$(dirname "$0")/lib.sh"

NS=sl-crash-$$
IF=slcr$$
IF=${IF:0:15}
BROKER=10.78.$(( $$ % 200 )).2
HOST=10.78.$(( $$ % 200 )).1
DATA=$TMP/data
N1=2000
K=1000
N2=100000
KILL_AT=20000

make_netns "$NS"
boot() {
	start_sluiced crash "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--data-dir "$DATA" --topic crash:1:disk --log-mb 8
	in_ns "$NS" ip addr replace "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
}
boot
[ -f "$DATA/crash/topic.conf" ] || fail "no topic.conf in the data directory"
grep -q '^durability=disk$' "$DATA/crash/topic.conf" || fail "topic.conf: $(cat "$DATA/crash/topic.conf")"

log "phase 1: $N1 messages, channel c1 consumes $K"
seq -f "crash message %06g" 1 $N1 > "$TMP/in1.txt"
in_ns "$NS" "$PUB" -a "$BROKER" crash < "$TMP/in1.txt" 2> "$TMP/pub1.log" ||
	fail "sluice-pub phase 1: $(cat "$TMP/pub1.log")"
in_ns "$NS" "$SUB" -a "$BROKER" -c c1 -n $K --from-start crash > "$TMP/c1a.txt" \
	2> "$TMP/sub1.log" || fail "sluice-sub c1"
head -n $K "$TMP/in1.txt" | cmp - "$TMP/c1a.txt" || fail "c1 did not get the first $K in order"

# the persistence lcore saves channel positions every 100 ms: wait for the file to say so
chan_pos() {
	python3 - "$DATA/crash/0/channels" c1 <<'PY'
import struct, sys, zlib
try:
    b = open(sys.argv[1], "rb").read()
except OSError:
    print(0); sys.exit()
assert b[:8] == b"SLCHANPS", b[:8]
count = struct.unpack_from("<I", b, 44)[0]
for i in range(count):
    e = b[64 + 96 * i: 64 + 96 * (i + 1)]
    name = e[:72].rstrip(b"\0").decode()
    if name == sys.argv[2]:
        print(struct.unpack_from("<Q", e, 80)[0]); sys.exit()
print(0)
PY
}
for i in $(seq 100); do
	[ "$(chan_pos)" = $((K + 1)) ] && break
	sleep 0.1
done
[ "$(chan_pos)" = $((K + 1)) ] || fail "channel file does not hold c1 at $((K + 1)): $(chan_pos)"

log "phase 2: $N2 messages, SIGKILL after $KILL_AT acknowledgements"
seq -f "crash message %06g" $((N1 + 1)) $((N1 + N2)) > "$TMP/in2.txt"
publish_until "$NS" "$BROKER" crash "$TMP/in2.txt" "$TMP/acked.txt" $KILL_AT
kill -KILL "$SLUICED_PID"
wait "$SLUICED_PID" 2>/dev/null
ACKED=$(wc -l < "$TMP/acked.txt")
[ "$ACKED" -ge $KILL_AT ] || fail "only $ACKED acknowledged before the kill"
# the publisher notices the dead broker (timeouts) and stops
wait "$PUBPID" && fail "sluice-pub succeeded although the broker died"
ACKED=$(wc -l < "$TMP/acked.txt")
log "killed with $ACKED of $N2 acknowledged"

log "phase 3: restart on the same data directory"
boot
ctl crash storage status crash > "$TMP/storage.json" || fail "storage status"
python3 - "$TMP/storage.json" <<'PY' || fail "storage status: $(cat "$TMP/storage.json")"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["partitions"][0]
st = p["storage"]
assert st["durability"] == "disk" and st["state"] == "ok", st
print("recovery:", st["recovery"]["result"], "| end id", st["recovery"]["end_id"])
assert st["recovery"]["end_id"] == p["message_count"], (st, p)
PY
ctl crash topic info crash > "$TMP/info.json" || fail "topic info"
M=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["partition_info"][0]["message_count"])' "$TMP/info.json")
python3 - "$TMP/info.json" $K <<'PY' || fail "c1 not restored: $(cat "$TMP/info.json")"
import json, sys
t = json.load(open(sys.argv[1]))
ch = {c["name"]: c for c in t["partition_info"][0]["channels"]}
assert "c1" in ch and ch["c1"]["confirmed_count"] == int(sys.argv[2]), ch
PY
log "recovered $M messages; c1 restored at $K"
[ "$M" -ge $((N1 + ACKED)) ] || fail "$M messages on disk, fewer than the $((N1 + ACKED)) acknowledged"

in_ns "$NS" "$SUB" -a "$BROKER" -c c1 -n $((M - K)) -t 30 crash > "$TMP/c1b.txt" \
	2> "$TMP/sub2.log" || fail "sluice-sub c1 after restart"
in_ns "$NS" "$SUB" -a "$BROKER" -c all -n "$M" -t 30 --from-start crash > "$TMP/all.txt" \
	2> "$TMP/sub3.log" || fail "sluice-sub all after restart"
python3 - "$TMP" $N1 $K "$M" <<'PY' || fail "content check"
import sys
tmp, n1, k, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
allm = open(tmp + "/all.txt").read().split("\n")[:-1]
c1 = open(tmp + "/c1b.txt").read().split("\n")[:-1]
acked = [int(x) for x in open(tmp + "/acked.txt").read().split()]
nums = [int(x.split()[-1]) for x in allm]
assert len(nums) == m, (len(nums), m)
assert len(set(nums)) == len(nums), "a message is on disk twice"
assert nums == sorted(nums), "messages out of order"
assert nums == list(range(1, m + 1)), "a gap: the log is not a prefix of what was sent"
have = set(nums)
missing = [a for a in acked if n1 + a not in have]
assert not missing, "acknowledged but lost: %s" % missing[:10]
assert c1 == allm[k:], "c1 did not resume right after its restored position"
print("all %d messages once and in order; %d acknowledged in phase 2, none lost" %
      (m, len(acked)))
PY

log "positions older than memory are looked up on disk (SET_OFFSET by offset and by time)"
# every message here is 20 bytes: a 56-byte record, so message k is at offset 56 (k - 1)
in_ns "$NS" "$SUB" -a "$BROKER" -c byoff -n 3 -t 30 --from-offset $((56 * 1499)) crash \
	> "$TMP/byoff.txt" 2> "$TMP/sub4.log" || fail "sluice-sub --from-offset: $(cat "$TMP/sub4.log")"
printf 'crash message %06d\n' 1500 1501 1502 | cmp - "$TMP/byoff.txt" ||
	fail "--from-offset did not start at message 1500: $(head -3 "$TMP/byoff.txt")"
in_ns "$NS" "$SUB" -a "$BROKER" -c bytime -n 2 -t 30 --from-time 1 crash \
	> "$TMP/bytime.txt" 2> "$TMP/sub5.log" || fail "sluice-sub --from-time: $(cat "$TMP/sub5.log")"
printf 'crash message %06d\n' 1 2 | cmp - "$TMP/bytime.txt" ||
	fail "--from-time 1 did not start at the first message: $(cat "$TMP/bytime.txt")"

log "clean shutdown"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
