#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Disk format compatibility: a data directory written by an earlier build of sluiced
# (tests/integration/data/disklog-v1.tar.gz: disk log format version 1, written before
# the partition module and the shared commit-record codec) is read by this build.
#   disk_compat.sh BUILD                 the test: unpack the fixture, start this build's
#                                        sluiced on it, check recovery, channel c1's saved
#                                        position, every message's body in order, and that
#                                        new publishes append after the old end
#   disk_compat.sh BUILD --make OUT      write the fixture with BUILD's binaries (how the
#                                        committed one was made, with a build of commit
#                                        4c18852): topic `compat`, durability disk, N
#                                        messages by sluice-pub, channel c1 consumed K
. "$(dirname "$0")/lib.sh"

MAKE=
[ "${2:-}" = "--make" ] && MAKE=$(realpath -m "$3")
FIXTURE=$(dirname "$0")/data/disklog-v1.tar.gz
NS=sl-compat-$$
IF=slcp$$
IF=${IF:0:15}
BROKER=10.79.$(( $$ % 200 )).2
HOST=10.79.$(( $$ % 200 )).1
DATA=$TMP/data
N=3000
K=1000

make_netns "$NS"
boot() {
	start_sluiced compat "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
		--data-dir "$DATA" --log-mb 8 "$@"
	in_ns "$NS" ip addr replace "$HOST/24" dev "$IF" || fail "address $IF"
	in_ns "$NS" ip link set "$IF" up || fail "link up $IF"
}

if [ -n "$MAKE" ]; then
	boot --topic compat:1:disk
	seq -f "compat message %06g" 1 $N > "$TMP/in.txt"
	in_ns "$NS" "$PUB" -a "$BROKER" compat < "$TMP/in.txt" 2> "$TMP/pub.log" ||
		fail "sluice-pub: $(cat "$TMP/pub.log")"
	in_ns "$NS" "$SUB" -a "$BROKER" -c c1 -n $K --from-start compat > /dev/null \
		2> "$TMP/sub.log" || fail "sluice-sub c1"
	sleep 1	# the channel file is saved every 100 ms, the checkpoint every second
	stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
	tar -C "$DATA" -czf "$MAKE" . || fail "tar"
	log "fixture written: $MAKE ($(stat -c %s "$MAKE") bytes)"
	exit 0
fi

mkdir -p "$DATA"
tar -C "$DATA" -xzf "$FIXTURE" || fail "cannot unpack $FIXTURE"
python3 - "$DATA/compat/0" <<'PY' || fail "fixture files are not disk log format version 1"
import os, struct, sys
d = sys.argv[1]
seen = 0
for f in sorted(os.listdir(d)):
    if f.endswith(".msg") or f.endswith(".clog"):
        b = open(os.path.join(d, f), "rb").read(16)
        assert len(b) == 16, f
        seen += 1
assert seen >= 2, os.listdir(d)
PY
boot
ctl compat storage status compat > "$TMP/storage.json" || fail "storage status"
python3 - "$TMP/storage.json" $N <<'PY' || fail "storage status: $(cat "$TMP/storage.json")"
import json, sys
s = json.load(open(sys.argv[1]))
st = s["partitions"][0]["storage"]
assert st["durability"] == "disk" and st["state"] == "ok", st
assert st["recovery"]["end_id"] == int(sys.argv[2]), st["recovery"]
print("recovery:", st["recovery"]["result"], "| end id", st["recovery"]["end_id"])
PY
ctl compat topic info compat > "$TMP/info.json" || fail "topic info"
python3 - "$TMP/info.json" $K <<'PY' || fail "c1 not restored: $(cat "$TMP/info.json")"
import json, sys
t = json.load(open(sys.argv[1]))
ch = {c["name"]: c for c in t["partition_info"][0]["channels"]}
assert "c1" in ch and ch["c1"]["confirmed_count"] == int(sys.argv[2]), ch
PY
seq -f "compat message %06g" 1 $N > "$TMP/expect.txt"
in_ns "$NS" "$SUB" -a "$BROKER" -c c1 -n $((N - K)) -t 30 compat > "$TMP/c1.txt" \
	2> "$TMP/sub1.log" || fail "sluice-sub c1: $(cat "$TMP/sub1.log")"
tail -n +$((K + 1)) "$TMP/expect.txt" | cmp - "$TMP/c1.txt" ||
	fail "c1 did not resume at $K with the old bodies"
in_ns "$NS" "$SUB" -a "$BROKER" -c all -n $N -t 30 --from-start compat > "$TMP/all.txt" \
	2> "$TMP/sub2.log" || fail "sluice-sub all: $(cat "$TMP/sub2.log")"
cmp "$TMP/expect.txt" "$TMP/all.txt" || fail "the old messages did not come back whole, in order"
log "the old log reads back: $N messages, c1 at $K"
seq -f "new message %06g" 1 100 > "$TMP/new.txt"
in_ns "$NS" "$PUB" -a "$BROKER" compat < "$TMP/new.txt" 2> "$TMP/pub.log" ||
	fail "sluice-pub on the old log: $(cat "$TMP/pub.log")"
in_ns "$NS" "$SUB" -a "$BROKER" -c all -n 100 -t 30 compat > "$TMP/all2.txt" \
	2> "$TMP/sub3.log" || fail "sluice-sub new: $(cat "$TMP/sub3.log")"
cmp "$TMP/new.txt" "$TMP/all2.txt" || fail "new publishes did not follow the old end"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
