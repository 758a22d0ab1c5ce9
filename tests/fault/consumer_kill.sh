#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A consumer SIGKILLed mid-stream: its session expires (heartbeat timeout), the messages it
# held in flight are redelivered to the next consumer of the channel, and no message is
# lost (NSQ at-least-once: a message printed but not yet finished may come twice).
. "$(dirname "$0")/../integration/lib.sh"

NS=sl-kill-$$
IF=slkill$$
IF=${IF:0:15}
BROKER=10.80.$(( $$ % 200 )).2
HOST=10.80.$(( $$ % 200 )).1
N=3000
make_netns "$NS"
# message timeout far longer than the test: redelivery can only come from session expiry
start_sluiced kill "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" --topic k:1 \
	--session-timeout-ms 1000 --msg-timeout-ms 600000
in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"

PAD=$(printf '%090d' 0)
seq -f "k%06g-$PAD" 1 $N > "$TMP/in.txt"
in_ns "$NS" "$PUB" -a "$BROKER" -q k < "$TMP/in.txt" || fail "publish"

log "consumer A takes messages (up to 200 in flight), stalls on a full pipe, is SIGKILLed"
# A writes into a FIFO nobody drains: once the pipe is full, A blocks before it FINs, so it
# holds its 200 in-flight messages when it dies
mkfifo "$TMP/a.fifo"
ip netns exec "$NS" "$SUB" -a "$BROKER" -c shared -r 200 k > "$TMP/a.fifo" 2> "$TMP/a.log" &
APID=$!
PIDS+=("$APID")
exec 3< "$TMP/a.fifo"
for _ in $(seq 200); do
	ctl kill channel list k > "$TMP/ch.json" || fail "channel list"
	grep -q '"in_flight": 200' "$TMP/ch.json" && break
	kill -0 "$APID" 2>/dev/null || fail "consumer A exited early"
	sleep 0.05
done
grep -q '"in_flight": 200' "$TMP/ch.json" || fail "consumer A never held 200 messages: $(cat "$TMP/ch.json")"
kill -KILL "$APID"
wait "$APID" 2>/dev/null
cat <&3 > "$TMP/a.txt"
exec 3<&-
A=$(wc -l < "$TMP/a.txt")
log "consumer A printed $A messages, held 200 more in flight when killed"
[ "$A" -lt $N ] || fail "consumer A finished everything before it could be killed"

log "consumer B gets everything else, including what A held in flight"
in_ns "$NS" "$SUB" -a "$BROKER" -c shared -t 5 k > "$TMP/b.txt" 2> "$TMP/b.log" ||
	fail "consumer B failed: $(cat "$TMP/b.log")"
B=$(wc -l < "$TMP/b.txt")
sort -u "$TMP/a.txt" "$TMP/b.txt" > "$TMP/union.txt"
sort -u "$TMP/in.txt" > "$TMP/want.txt"
comm -23 "$TMP/want.txt" "$TMP/union.txt" > "$TMP/missing.txt"
[ -s "$TMP/missing.txt" ] && fail "$(wc -l < "$TMP/missing.txt") messages lost, e.g. $(head -3 "$TMP/missing.txt" | tr '\n' ' ')"
DUP=$(( A + B - N ))
log "A $A + B $B = $N + $DUP redelivered duplicates; none lost"
[ "$DUP" -le 200 ] || fail "more duplicates ($DUP) than A could hold in flight (200)"
ctl kill channel list k > "$TMP/ch.json" || fail "channel list"
grep -q '"depth": 0' "$TMP/ch.json" || fail "channel not drained: $(cat "$TMP/ch.json")"
# B closed its session on exit; the broker drops its subscription within a tick
for _ in $(seq 100); do
	ctl kill channel list k > "$TMP/ch.json" || fail "channel list"
	grep -q '"subscribers": 0' "$TMP/ch.json" && break
	sleep 0.05
done
grep -q '"subscribers": 0' "$TMP/ch.json" || fail "closed subscriber still registered"
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
