#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The Prometheus endpoint (--metrics-address): a node on a tap in its own namespace serves
# http://127.0.0.1:PORT/metrics there. Scraped before, during and after a publish run of
# N messages to a disk topic: sluice_partition_messages_in_total of the topic grows from 0
# to exactly N, the channel's depth follows, the sync latency histogram counts the syncs,
# and `promtool check metrics` accepts every scrape. Then the hostile side: other paths
# 404, other methods 405, an oversized request head 431, a silent connection is closed
# after the idle time, connections past the limit are closed at once, and the endpoint
# still answers afterwards.
. "$(dirname "$0")/lib.sh"

command -v promtool > /dev/null || fail "promtool missing (Debian package prometheus)"
command -v curl > /dev/null || fail "curl missing"

NS=sl-prom-$$
IF=slprom$$
IF=${IF:0:15}
BROKER=10.81.$(( $$ % 200 )).2
HOST=10.81.$(( $$ % 200 )).1
MADDR=127.0.0.1:9464
N=6000

make_netns "$NS"
start_sluiced prom "$NS" "" -- --port "net_tap0,iface=$IF" --ip "$BROKER" \
	--data-dir "$TMP/data" --durability disk --metrics-address "$MADDR"
in_ns "$NS" ip addr add "$HOST/24" dev "$IF" || fail "address"
in_ns "$NS" ip link set "$IF" up || fail "link up"
ctl prom topic create m 2 > /dev/null || fail "topic create m"
ctl prom channel create m c > /dev/null || fail "channel create"

# scrape: GET /metrics into $TMP/scrape-K.txt, checked by promtool; prints the file name
scrape() {
	local k=$(( $(cat "$TMP/k" 2>/dev/null || echo 0) + 1 ))
	local f=$TMP/scrape-$k.txt
	echo $k > "$TMP/k"
	in_ns "$NS" curl -sS -f -m 10 -D "$f.head" -o "$f" "http://$MADDR/metrics" ||
		fail "scrape $k failed"
	grep -qi '^content-type: text/plain; version=0.0.4' "$f.head" ||
		fail "scrape $k: content type: $(cat "$f.head")"
	promtool check metrics < "$f" > "$f.lint" 2>&1 ||
		fail "promtool check metrics (scrape $k): $(head -20 "$f.lint")"
	echo "$f"
}
# total FILE METRIC SELECTOR: sum of the samples of METRIC whose labels contain SELECTOR
total() {
	awk -v m="$2" -v sel="$3" '
		{ n = $1; sub(/[{].*/, "", n) }
		n == m && index($1, sel) { s += $NF }
		END { printf "%d\n", s }' "$1"
}

log "before publishing: every family, zero messages in, promtool accepts it"
F=$(scrape)
for fam in sluice_partition_messages_in_total sluice_partition_received_bytes_total \
	sluice_partition_end_offset_bytes sluice_channel_depth sluice_channel_in_flight \
	sluice_partition_replication_lag_messages sluice_partition_isr_size \
	sluice_persist_sync_duration_seconds sluice_drops_total sluice_errors_total \
	sluice_worker_busy_ratio; do
	grep -q "^# TYPE $fam " "$F" || fail "no family $fam in $F"
done
# the snapshot behind the partition metrics is refreshed every second: await it
for i in $(seq 100); do
	F=$(scrape)
	grep -q '^sluice_partition_messages_in_total{topic="m",partition="1"}' "$F" && break
	sleep 0.1
done
[ "$(total "$F" sluice_partition_messages_in_total 'topic="m"')" = 0 ] ||
	fail "messages in before publishing: $(grep messages_in_total "$F")"
grep -q '^sluice_persist_sync_duration_seconds_bucket{le="+Inf"}' "$F" ||
	fail "no +Inf bucket"

log "during the run: the counters move"
seq -f "m%06g-0123456789abcdef0123456789abcdef" 1 $N > "$TMP/in.txt"
publish_until "$NS" "$BROKER" m "$TMP/in.txt" "$TMP/acked" 1 -P any -w 8
SEEN=0
for i in $(seq 300); do
	F=$(scrape)
	SEEN=$(total "$F" sluice_partition_messages_in_total 'topic="m"')
	[ "$SEEN" -gt 0 ] && break
	sleep 0.1
done
[ "$SEEN" -gt 0 ] || fail "messages_in_total stayed 0 during the run"
log "scrape $(cat "$TMP/k") during the run: $SEEN message(s) in," \
	"$(wc -l < "$TMP/acked") acknowledged"
wait "$PUBPID" || fail "sluice-pub: $(cat "$TMP/acked.log")"
[ "$(wc -l < "$TMP/acked")" = $N ] || fail "$(wc -l < "$TMP/acked") of $N acknowledged"

log "after the run: messages_in_total grew by exactly $N"
for i in $(seq 300); do
	F=$(scrape)
	SEEN=$(total "$F" sluice_partition_messages_in_total 'topic="m"')
	[ "$SEEN" = $N ] && break
	[ "$SEEN" -gt $N ] && break
	sleep 0.1
done
[ "$SEEN" = $N ] || fail "messages_in_total of m is $SEEN, published $N"
DEPTH=$(total "$F" sluice_channel_depth 'channel="c"')
[ "$DEPTH" = $N ] || fail "depth of channel c is $DEPTH, expected $N"
BYTES=$(total "$F" sluice_partition_received_bytes_total 'topic="m"')
[ "$BYTES" -ge $((N * 40)) ] || fail "received bytes of m: $BYTES, at least $((N * 40)) expected"
SYNCS=$(awk '$1 == "sluice_persist_sync_duration_seconds_count" { print $2 }' "$F")
[ "${SYNCS:-0}" -gt 0 ] || fail "the sync histogram counted no sync"
python3 - "$F" <<'PY' || fail "histogram: $(grep sync_duration "$F")"
import sys
b = []
for line in open(sys.argv[1]):
    if line.startswith("sluice_persist_sync_duration_seconds_bucket"):
        le = line.split('le="')[1].split('"')[0]
        b.append((float("inf") if le == "+Inf" else float(le), int(line.split()[-1])))
assert b == sorted(b), b
assert len(b) == 17, b
print("syncs: %d, median bucket le=%s" % (b[-1][1], next(le for le, n in b if n * 2 >= b[-1][1])))
PY
log "$SEEN messages in, $BYTES bytes, depth $DEPTH, $SYNCS syncs:" \
	"$(grep -c '^sluice_' "$F") samples"

log "hostile clients: 404, 405, 431, idle timeout, connection limit"
in_ns "$NS" python3 - "$MADDR" <<'PY' || fail "hostile HTTP checks"
import socket, subprocess, sys, time
host, port = sys.argv[1].rsplit(":", 1)
addr = (host, int(port))

def ask(raw):
    s = socket.create_connection(addr, timeout=10)
    s.sendall(raw)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    return data.split(b"\r\n", 1)[0].decode()

for raw, want in ((b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "404"),
                  (b"GET /metricsx HTTP/1.1\r\n\r\n", "404"),
                  (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "405"),
                  (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n", "431"),
                  (b"GARBAGE\r\n\r\n", "400"),
                  (b"GET /metrics?x=1 HTTP/1.0\r\n\r\n", "200")):
    got = ask(raw)
    assert got.split(" ")[1] == want, (raw[:40], got)

# a silent connection is closed by the server (idle time 5 s): await the EOF
s = socket.create_connection(addr, timeout=30)
t0 = time.monotonic()
assert s.recv(1) == b""
print("silent connection closed after %.1f s" % (time.monotonic() - t0))
s.close()

# 16 connections at once are held; more are closed at once without an answer
held = [socket.create_connection(addr, timeout=30) for _ in range(16)]

def backlog():	# connections waiting in the listen socket's accept queue
    out = subprocess.run(["ss", "-Hltn", "sport = :%s" % port], capture_output=True,
                         text=True).stdout.split()
    return int(out[1]) if len(out) > 1 else -1

for _ in range(300):	# await the server's accepting all 16
    if backlog() == 0:
        break
    time.sleep(0.1)
assert backlog() == 0, "the server did not accept 16 connections"
extra = socket.create_connection(addr, timeout=30)
extra.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
try:
    assert extra.recv(100) == b"", "an extra connection was served"
except ConnectionResetError:
    pass
for h in held:
    h.close()
# the server frees the 16 slots as it sees the closes: until then a new connection is
# still one too many (closed at once, a reset); await the first one served
got = ""
for _ in range(300):
    try:
        got = ask(b"GET /metrics HTTP/1.1\r\n\r\n")
    except (ConnectionResetError, BrokenPipeError):
        got = "reset"
    if got.startswith("HTTP/1.1 200"):
        break
    time.sleep(0.1)
assert got.startswith("HTTP/1.1 200"), "not served after the 16 closed: %s" % got
print("connection limit held; served again after")
PY
F=$(scrape)
cp "$F" "$BUILD/meson-logs/metrics-scrape.txt" 2>/dev/null	# a sample for the reader
stop_pid "$SLUICED_PID" || fail "sluiced exited with $? on SIGTERM"
log "PASS"
