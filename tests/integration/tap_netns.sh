#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# sluiced on a net_tap port inside a network namespace this test creates; kernel-socket
# clients in the same namespace. Checks ARP + ICMP echo, then a `sluice-pub | sluice-sub`
# round trip of 10,000 messages compared one by one, clean shutdown on SIGTERM (exit 0,
# no socket or hugepage file left), and the control socket's view of it.
. "$(dirname "$0")/lib.sh"

NS=sl-tap-$$
IF=sltap$$
IF=${IF:0:15}
BROKER=10.77.$(( $$ % 200 )).2
HOST=10.77.$(( $$ % 200 )).1
N=10000

make_netns "$NS"
start_sluiced tap "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" --topic rt:1 --auto-create=2
in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address $IF"
in_ns "$NS" ip link set "$IF" up || fail "link up $IF"

log "ARP and ICMP echo"
in_ns "$NS" ping -c 3 -i 0.2 -W 2 "$BROKER" > "$TMP/ping.out" || fail "ping: $(cat "$TMP/ping.out")"

log "$N messages through sluice-pub | sluice-sub"
seq -f "message %g of $N: the quick brown fox" 1 $N > "$TMP/in.txt"
ip netns exec "$NS" "$SUB" -a "$BROKER" -c check -n $N rt > "$TMP/out.txt" 2> "$TMP/sub.log" &
SUBPID=$!
PIDS+=("$SUBPID")
in_ns "$NS" "$PUB" -a "$BROKER" rt < "$TMP/in.txt" 2> "$TMP/pub.log" || fail "sluice-pub failed"
grep -q "published $N messages" "$TMP/pub.log" || fail "pub: $(cat "$TMP/pub.log")"
wait "$SUBPID" || fail "sluice-sub exited with $?"
cmp "$TMP/in.txt" "$TMP/out.txt" || {
	diff "$TMP/in.txt" "$TMP/out.txt" | head -5
	fail "received messages differ from the published ones"
}
log "all $N messages received in order and intact"

log "control socket"
ctl tap topic info rt > "$TMP/info.json" || fail "topic info"
grep -q "\"message_count\": $N" "$TMP/info.json" || fail "message_count != $N: $(cat "$TMP/info.json")"
grep -q '"name": "check"' "$TMP/info.json" || fail "channel 'check' missing"
grep -q '"depth": 0' "$TMP/info.json" || fail "channel not fully consumed"
ctl tap stats workers > "$TMP/stats.json" || fail "stats"
grep -q '"arp_replies": [1-9]' "$TMP/stats.json" || fail "no ARP reply counted"
grep -q '"icmp_replies": [1-9]' "$TMP/stats.json" || fail "no ICMP reply counted"
# the kernel-UDP client bundles the requests it has ready together (how many depends on
# timing: hostile_proto and test_xport_udp check bundles exactly); none may be refused
grep -q '"bad_bundle": 0' "$TMP/stats.json" || fail "bundles refused"
log "bundles: $(grep -oE '"bundle(s|_frames)_(in|out)": [0-9]+' "$TMP/stats.json" | tr '\n' ' ')"

log "auto-creation on first publish"
echo "created on the fly" | in_ns "$NS" "$PUB" -a "$BROKER" -q fresh || fail "publish to a new topic"
ctl tap topic list | grep -A2 '"name": "fresh"' | grep -q '"partitions": 2' || fail "topic fresh not auto-created"

log "DPDK telemetry (the protocol dpdk-telemetry.py speaks)"
# /sluice/partitions is a snapshot the control thread refreshes every second: asked again
# (up to 10 s) until it shows the partition's messages and its channel, as a monitoring
# client polling it would see them; the run above can end before the first refresh
python3 - "/var/run/dpdk/sl-tap-$$/dpdk_telemetry.v2" > "$TMP/tel.json" <<'PY' || fail "telemetry"
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
json.loads(s.recv(16384))                    # greeting
end = time.monotonic() + 10
while True:
    out = {}
    for cmd in ("/sluice/status", "/sluice/workers", "/sluice/partitions", "/ethdev/stats,0"):
        s.send(cmd.encode())
        out.update(json.loads(s.recv(1 << 20)))
    rt = out["/sluice/partitions"].get("rt/0", {})
    if rt.get("message_count", 0) > 0 and "chan/check/depth" in rt or time.monotonic() > end:
        break
    time.sleep(0.1)
print(json.dumps(out))
PY
python3 - "$TMP/tel.json" "$N" <<'PY' || fail "telemetry content: $(cat "$TMP/tel.json")"
import json, sys
t = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert t["/sluice/status"]["topics"] == 2, t["/sluice/status"]
assert t["/sluice/workers"]["worker0"]["messages_in"] >= n, t["/sluice/workers"]
assert t["/ethdev/stats"]["ipackets"] >= n, t["/ethdev/stats"]
parts = t["/sluice/partitions"]
# a snapshot refreshed every second: the partition and its channel are there, with counts
assert 0 < parts.get("rt/0", {}).get("message_count", 0) <= n, parts
assert isinstance(parts["rt/0"].get("chan/check/depth"), int), parts["rt/0"]
PY

log "clean shutdown"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
[ -e "$TMP/tap.sock" ] && fail "control socket left behind"
ls /dev/hugepages 2>/dev/null | grep -q "sl-tap-$$" && fail "hugepage files left behind"
[ -d "/var/run/dpdk/sl-tap-$$" ] && fail "DPDK runtime directory left behind"
log "PASS"
