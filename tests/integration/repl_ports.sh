#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A dedicated replication link, as on nodes with a client NIC and a replication NIC: node 1
# serves clients on a net_tap port (port 0, in a network namespace made here) and reaches
# node 2 over a net_memif pair (its port 1, --ip a.b.c.d/24); node 2 has the memif port
# only. The cluster file names the nodes by their replication addresses, so node 1 routes
# replica datagrams to node 2 by the subnet of its port 1. Topic `r`, replicas 1,2, ISR of
# both: every acknowledged message is on node 2 too, which has no other way to get it.
# Also: an --ip with a bad prefix length stops sluiced with a clear error.
. "$(dirname "$0")/lib.sh"

NS=sl-rport-$$
IF=slrp$$
IF=${IF:0:15}
NET=10.86.$(( $$ % 200 ))
REP=10.87.$(( $$ % 200 ))
SOCK=$TMP/repl-memif.sock
N=3000

log "an address with a bad prefix length is refused"
# shellcheck disable=SC2086
"$SLUICED" $SLUICE_EAL --file-prefix "sl-rpbad-$$" -- --port net_null0 --ip 10.0.0.1/33 \
	--control "$TMP/bad.sock" > "$TMP/bad.log" 2>&1 && fail "sluiced started with --ip 10.0.0.1/33"
grep -q "bad IPv4 address '10.0.0.1/33'" "$TMP/bad.log" ||
	fail "no clear error: $(tail -3 "$TMP/bad.log")"

cat > "$TMP/cluster.conf" <<CONF
node 1 $REP.1
node 2 $REP.2
partition r 0 replicas=1,2 leader=1 isr=1,2
CONF
"$CTL" keygen "$TMP/cluster.key" || fail "sluicectl keygen"
make_netns "$NS"
start_sluiced n1 "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$NET.2/24" \
	--port "net_memif0,role=server,id=0,socket=$SOCK,socket-abstract=no" --ip "$REP.1/24" \
	--node-id 1 --cluster "$TMP/cluster.conf" --cluster-key "$TMP/cluster.key" --data-dir "$TMP/data1"
P1=$SLUICED_PID
in_ns "$NS" ip addr add "$NET.1/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"
start_sluiced n2 "" "" -- --port "net_memif0,role=client,id=0,socket=$SOCK,socket-abstract=no" \
	--ip "$REP.2/24" --node-id 2 --cluster "$TMP/cluster.conf" \
	--cluster-key "$TMP/cluster.key" --data-dir "$TMP/data2"
P2=$SLUICED_PID

ctl n1 status > "$TMP/status.json" || fail "status"
python3 - "$TMP/status.json" <<'PY' || fail "status: $(cat "$TMP/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert [p["prefix_len"] for p in s["ports"]] == [24, 24], s["ports"]
nodes = {n["id"]: n for n in s["nodes"]}
assert nodes[1].get("self") and nodes[2]["via_port"] == s["ports"][1]["name"], nodes
assert "memif" in nodes[2]["via_port"], nodes
PY
log "node 1 reaches node 2 through its memif port"

seq -f "m%06g" 1 $N > "$TMP/in.txt"
publish_until "$NS" "$NET.2" r "$TMP/in.txt" "$TMP/acked.txt" $N
wait "$PUBPID" || fail "sluice-pub exited with $?: $(cat "$TMP/acked.txt.log")"
count_of() {
	ctl "n$1" topic info r | python3 -c '
import json, sys
print(json.load(sys.stdin)["partition_info"][0]["message_count"])'
}
c1=$(count_of 1)
c2=$(count_of 2)
[ "$c1" = $N ] || fail "node 1 holds $c1 messages, not $N"
[ "$c2" = $N ] || fail "node 2 holds $c2 messages, not $N"
log "$N acknowledged messages, $c2 on node 2"

# replica traffic left node 1 through the memif port, never the client port
ctl n1 stats ports > "$TMP/ports.json" || fail "stats ports"
python3 - "$TMP/ports.json" $N <<'PY' || fail "port counters: $(cat "$TMP/ports.json")"
import json, sys
p = json.load(open(sys.argv[1]))["ports"]
n = int(sys.argv[2])
tap, memif = p[0], p[1]
# the tap port carried the publishes and their answers (and a little ARP), the memif
# port the WRITEs; their acks came back on it
assert tap["tx_packets"] <= n + 50, tap
assert memif["tx_packets"] > 0 and memif["rx_packets"] > 0, memif
PY
stop_pid "$P1" || fail "node 1 exited with $? on SIGTERM"
stop_pid "$P2" || fail "node 2 exited with $? on SIGTERM"
# past the 64-byte file header (it holds the file's creation time): record for record
for f in "$TMP"/data1/r/0/*.msg "$TMP"/data1/r/0/*.clog; do
	cmp -s -i 64 "$f" "$TMP/data2/r/0/$(basename "$f")" ||
		fail "node 2's $(basename "$f") differs from node 1's"
done
log "the two logs are identical"
log "PASS"
