#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The membership seam: a static cluster file gives each partition of topic `m` its
# replicas, leader, ISR and epoch; the control socket changes them at run time. Checks the
# leader write path's refusals with their errors: not the leader, writes disabled, ISR not
# a majority; a view with a stale epoch is refused; a bad cluster file stops sluiced with
# the file and line.
. "$(dirname "$0")/lib.sh"

NS=sl-memb-$$
IF=slmb$$
IF=${IF:0:15}
BROKER=10.82.$(( $$ % 200 )).2
HOST=10.82.$(( $$ % 200 )).1

cat > "$TMP/bad.conf" <<CONF
node 1 $BROKER
partition m 0 replicas=1,2 leader=1 isr=1
CONF
log "a cluster file naming an undeclared node is refused"
# shellcheck disable=SC2086
"$SLUICED" $SLUICE_EAL --file-prefix "sl-membbad-$$" -- --port "net_null0" --ip 10.0.0.1 \
	--control "$TMP/bad.sock" --cluster "$TMP/bad.conf" > "$TMP/bad.log" 2>&1 &&
	fail "sluiced started with a bad cluster file"
grep -q "bad.conf:2: node 2 is not declared" "$TMP/bad.log" || fail "no clear error: $(tail -3 "$TMP/bad.log")"

cat > "$TMP/cluster.conf" <<CONF
# three nodes; this one is node 1
node 1 $BROKER
node 2 10.82.250.2
node 3 10.82.250.3 5199
partition m 0 replicas=1 leader=1 isr=1
partition m 1 replicas=1,2 leader=2 isr=2,1 epoch=2 session=7
partition m 2 replicas=1,2,3 leader=1 isr=1
partition m 3 replicas=1 leader=1 isr=1 writes=off
CONF
log "a multi-node cluster without a cluster key is refused, naming the way out"
# shellcheck disable=SC2086
"$SLUICED" $SLUICE_EAL --file-prefix "sl-membkey-$$" -- --port "net_null0" --ip 10.0.0.1 \
	--control "$TMP/bad.sock" --cluster "$TMP/cluster.conf" > "$TMP/nokey.log" 2>&1 &&
	fail "sluiced started a 3-node cluster without a key"
grep -q "needs a key (--cluster-key FILE" "$TMP/nokey.log" ||
	fail "no clear error: $(tail -3 "$TMP/nokey.log")"
log "a key file others can read is refused"
"$CTL" keygen "$TMP/cluster.key" || fail "sluicectl keygen"
"$CTL" keygen "$TMP/cluster.key" 2> /dev/null && fail "keygen overwrote an existing key"
[ "$(stat -c %a "$TMP/cluster.key")" = 600 ] || fail "keygen: mode $(stat -c %a "$TMP/cluster.key")"
cp "$TMP/cluster.key" "$TMP/open.key"
chmod 644 "$TMP/open.key"
# shellcheck disable=SC2086
"$SLUICED" $SLUICE_EAL --file-prefix "sl-membkey-$$" -- --port "net_null0" --ip 10.0.0.1 \
	--control "$TMP/bad.sock" --cluster "$TMP/cluster.conf" --cluster-key "$TMP/open.key" \
	> "$TMP/openkey.log" 2>&1 && fail "sluiced took a key file others can read"
grep -q "readable by no one else" "$TMP/openkey.log" ||
	fail "no clear error: $(tail -3 "$TMP/openkey.log")"

make_netns "$NS"
start_sluiced memb "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" --node-id 1 \
	--cluster "$TMP/cluster.conf" --cluster-key "$TMP/cluster.key"
in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"

pub() {	# pub PARTITION: publish one message, print sluice-pub's error line (empty if ok)
	echo "to $1" | in_ns "$NS" "$PUB" -a "$BROKER" -P "$1" -q m 2>&1 | sed 's/.*failed: //'
}
expect() {	# expect PARTITION WANT
	local got
	got=$(pub "$1")
	[ "$got" = "$2" ] || fail "partition $1: expected '${2:-ok}', got '${got:-ok}'"
	log "partition $1: ${got:-acknowledged}"
}
expect 0 ""
expect 1 "not the partition leader"
expect 2 "not enough in-sync replicas"
expect 3 "writes disabled"

log "views through the control socket"
ctl memb partition show m > "$TMP/show.json" || fail "partition show"
python3 - "$TMP/show.json" <<'PY' || fail "partition show: $(cat "$TMP/show.json")"
import json, sys
p = json.load(open(sys.argv[1]))["partitions"]
assert [x["leader"] for x in p] == [1, 2, 1, 1], p
assert p[1]["epoch"] == 2 and p[1]["leader_session"] == 7 and p[1]["isr"] == [2, 1], p[1]
assert [x["writable"] for x in p] == [True, False, False, False], p
PY
ctl memb partition set m 3 writes=on > /dev/null || fail "writes=on"
expect 3 ""
ctl memb partition set m 1 leader=1 isr=1 replicas=1 > "$TMP/set.json" || fail "take leadership"
grep -q '"epoch": 3' "$TMP/set.json" || fail "leadership change did not bump the epoch: $(cat "$TMP/set.json")"
grep -q '"leader_session": 8' "$TMP/set.json" || fail "nor the session: $(cat "$TMP/set.json")"
expect 1 ""
ctl memb partition set m 1 epoch=2 > "$TMP/stale.json" 2>&1 && fail "a stale epoch was accepted"
grep -q "epoch mismatch" "$TMP/stale.json" || fail "stale epoch: $(cat "$TMP/stale.json")"
ctl memb partition set m 0 isr=2 > "$TMP/badisr.json" 2>&1 && fail "an ISR without the leader was accepted"
grep -q "not a replica\|not in the ISR" "$TMP/badisr.json" || fail "bad ISR: $(cat "$TMP/badisr.json")"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
