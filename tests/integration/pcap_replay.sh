#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# sluice-pcap and anonymous publish (--anon-publish), end to end with real sluiced processes
# on DPDK's net_pcap PMD, answers written by the PMD to a pcap file (tx_pcap):
#
# 1. sluiced --anon-publish: net_pcap0 reads a veth in a network namespace this test creates
#    (rx_iface_in) and writes its answers to a file; a python script replays generated pcaps
#    into the veth's peer. Checks, for 1000 PUB frames, 250 MPUB frames of 8 messages and 500
#    NOACK PUB frames: exact message counts per partition (sluicectl topic info) and in
#    `stats workers`, one OK per cookie (none with NOACK) with ids that tile each partition,
#    and, read back with sluice-sub over a second (tap) port, every message byte for byte.
#    (Not rx_pcap=FILE here: net_pcap replays the whole file the moment the port starts, and
#    sluiced creates its --topic topics only after that, so the frames would find no topic.)
# 2. sluiced without --anon-publish, rx_pcap=FILE on two net_pcap ports (this also has
#    libpcap read the generated files): every frame, NOACK or not, is answered with ERR
#    SL_E_SESSION and nothing is written.
. "$(dirname "$0")/lib.sh"

PCAPGEN=$BUILD/tools/sluice-pcap
NS=sl-pcap-$$
VA=slpa$$
VA=${VA:0:15}
VB=slpb$$
VB=${VB:0:15}
TAP=slpt$$
TAP=${TAP:0:15}
NET=10.78.$(($$ % 200))
BROKER=$NET.2      # net_pcap port (anonymous publishers)
BROKER2=$NET.3     # second net_pcap port of the broker without --anon-publish
TAP_BROKER=10.79.$(($$ % 200)).2
TAP_HOST=10.79.$(($$ % 200)).1
GEN_MAC=02:00:00:00:00:01
GEN_IP=198.18.0.1
SPORTS=40000-40063
SL_E_SESSION=1004
SL_E_TOPIC=1005
N_PUB=1000
N_MPUB=250
BATCH=8
N_NOACK=500

[ -x "$PCAPGEN" ] || fail "$PCAPGEN not built"

# ---- helpers -------------------------------------------------------------------------

# the answers in a pcap the broker wrote: count them, or check them against the requests
cat > "$TMP/answers.py" <<'PY'
import argparse, json, struct, sys

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s

def records(path):
    """Complete records of a classic pcap file (a record being written is left out)."""
    data = open(path, "rb").read()
    if len(data) < 24:
        return
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        if off + 16 + incl > len(data):
            return
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl

def answers(path):
    """sluice frames sent from UDP port 5150 (other frames, e.g. ARP, are skipped)."""
    for f in records(path):
        if len(f) < 42 + 32 or f[12:14] != b"\x08\x00" or f[23] != 17:
            continue
        ihl = (f[14] & 15) * 4
        udp = f[14 + ihl:]
        if struct.unpack("!H", udp[:2])[0] != 5150 or udp[8:10] != b"SL":
            continue
        yield f

ap = argparse.ArgumentParser()
ap.add_argument("cmd", choices=["count", "check"])
ap.add_argument("pcap")
ap.add_argument("--skip", type=int, default=0)
ap.add_argument("--n", type=int)
ap.add_argument("--expect", choices=["ok", "err"])
ap.add_argument("--code", type=int)
ap.add_argument("--req-op", type=int)
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--gen-mac")
ap.add_argument("--gen-ip")
ap.add_argument("--broker-ip")
ap.add_argument("--sports", help="LO-HI")
ap.add_argument("--topic-info", help="sluicectl --json topic info output")
a = ap.parse_args()

if a.cmd == "count":
    print(sum(1 for _ in answers(a.pcap)))
    sys.exit(0)

got = list(answers(a.pcap))[a.skip:]
assert len(got) == a.n, "%d answers, expected %d" % (len(got), a.n)
lo, hi = (int(x) for x in a.sports.split("-"))
mac = bytes.fromhex(a.gen_mac.replace(":", ""))
cookies = set()
ranges = {}                                   # partition -> [(first id, count)]
for f in got:
    ip, udp = f[14:34], f[34:]
    assert f[0:6] == mac, "answer to MAC %s" % f[0:6].hex(":")
    assert csum(ip) == 0xFFFF, "bad IPv4 checksum"
    assert ip[12:16] == bytes(map(int, a.broker_ip.split("."))), "source IP"
    assert ip[16:20] == bytes(map(int, a.gen_ip.split("."))), "destination IP"
    ulen = struct.unpack("!H", udp[4:6])[0]
    udp = udp[:ulen]
    if udp[6:8] != b"\0\0":
        assert csum(ip[12:20] + struct.pack("!BBH", 0, 17, ulen) + udp) == 0xFFFF, "UDP cksum"
    dport = struct.unpack("!H", udp[2:4])[0]
    magic, ver, op, flags, blen, sess, seq, cookie = struct.unpack("!HBBHHQQQ", udp[8:40])
    body = udp[40:]
    assert (magic, ver, sess, blen) == (0x534C, 1, 0, len(body)), "header"
    assert seq == cookie, "seq %d != cookie %d" % (seq, cookie)
    assert 1 <= cookie <= a.n and cookie not in cookies, "cookie %d" % cookie
    cookies.add(cookie)
    assert dport == lo + (cookie - 1) % (hi - lo + 1), "cookie %d to port %d" % (cookie, dport)
    if a.expect == "ok":
        assert op == 0x80, "cookie %d: opcode 0x%02x, body %s" % (cookie, op, body.hex())
        rop, _, part, cnt, mid, moff, aux = struct.unpack("!BBHIQQQ", body)
        assert rop == a.req_op and cnt == a.batch, "OK %d: op %d count %d" % (cookie, rop, cnt)
        ranges.setdefault(part, []).append((mid, cnt))
    else:
        assert op == 0x81, "cookie %d: opcode 0x%02x" % (cookie, op)
        code, rop = struct.unpack("!HB", body[:3])
        assert code == a.code and rop == a.req_op, "ERR %d: code %d op %d" % (cookie, code, rop)
assert len(cookies) == a.n
if a.expect == "ok":
    info = json.load(open(a.topic_info))
    for p in info["partition_info"]:
        r = sorted(ranges.get(p["partition"], []))
        nxt = 1
        for first, cnt in r:                  # OK ids tile the partition: 1, 2, ... count
            assert first == nxt, "partition %d: id %d, expected %d" % (p["partition"], first, nxt)
            nxt += cnt
        assert nxt - 1 == p["message_count"], "partition %d: %d OKed, message_count %d" % (
            p["partition"], nxt - 1, p["message_count"])
    assert set(ranges) <= {p["partition"] for p in info["partition_info"]}, "partitions"
print("%d answers checked" % a.n)
PY

# replay a pcap into an interface (AF_PACKET), 64 frames at a time, each time waiting until
# the broker's port has received them (so that no socket buffer overflows)
cat > "$TMP/inject.py" <<'PY'
import json, socket, struct, subprocess, sys, time

iface, path, ctl, sock, port = sys.argv[1:6]

def port_rx():
    out = subprocess.run([ctl, "-s", sock, "--json", "stats", "ports"], check=True,
                         capture_output=True, text=True).stdout
    return [p for p in json.loads(out)["ports"] if p["name"] == port][0]["rx_packets"]

data = open(path, "rb").read()
assert struct.unpack("<I", data[:4])[0] == 0xA1B2C3D4 and struct.unpack("<I", data[20:24])[0] == 1
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
base, sent, off = port_rx(), 0, 24
while off < len(data):
    incl = struct.unpack("<I", data[off + 8:off + 12])[0]
    s.send(data[off + 16:off + 16 + incl])
    off += 16 + incl
    sent += 1
    if sent % 64 == 0 or off >= len(data):
        deadline = time.monotonic() + 10
        while port_rx() < base + sent:
            if time.monotonic() > deadline:
                sys.exit("the broker received %d of %d frames" % (port_rx() - base, sent))
            time.sleep(0.01)
print("%d frames replayed" % sent)
PY

# wait_for SECONDS DESCRIPTION CMD...: poll CMD until it succeeds, at most SECONDS
wait_for() {
	local secs=$1 what=$2 _
	shift 2
	for _ in $(seq $((secs * 20))); do
		"$@" && return 0
		sleep 0.05
	done
	fail "timed out after $secs s waiting for $what"
}

# ctl_py NAME EXPR ARGS...: evaluate the python expression EXPR on `sluicectl --json ARGS` (d)
ctl_py() {
	local name=$1 expr=$2
	shift 2
	ctl "$name" --json "$@" | python3 -c "import json, sys; d = json.load(sys.stdin); print($expr)"
}

workers_sum() { ctl_py "$1" "sum(w['$2'] for w in d['workers'])" stats workers; }
topic_total() {
	ctl_py "$1" "sum(p['message_count'] for p in d['partition_info'])" topic info "$2"
}
n_answers() { python3 "$TMP/answers.py" count "$1"; }
# at_least N CMD...: CMD prints a number >= N
at_least() {
	local n=$1 v
	shift
	v=$("$@") || return 1
	[ "$v" -ge "$n" ]
}

# gen FILE ARGS...: sluice-pcap with the generator's addresses
gen() {
	local out=$1
	shift
	"$PCAPGEN" -q -o "$out" --src-mac $GEN_MAC --src-ip $GEN_IP --src-port $SPORTS "$@" ||
		fail "sluice-pcap $*"
}

# expect_msgs TOPIC N: read TOPIC back over the tap port, channel "check" (created before
# the publishes, so it starts at the first message; sluice-sub --from-start is not used: it
# moves the position after SUB, and messages already delivered by then come again), and
# compare with messages 1..N
expect_msgs() {
	local topic=$1 n=$2 p cnt
	: > "$TMP/$topic.got"
	for p in $(seq 0 $(($(ctl_py anon "d['partitions']" topic info "$topic") - 1))); do
		cnt=$(ctl_py anon "d['partition_info'][$p]['message_count']" topic info "$topic")
		[ "$cnt" -gt 0 ] || continue
		in_ns "$NS" "$SUB" -a "$TAP_BROKER" -P "$p" -c check -n "$cnt" -t 10 "$topic" \
			>> "$TMP/$topic.got" 2>> "$TMP/sub.log" || fail "sluice-sub $topic/$p"
	done
	printf '%064d\n' $(seq "$n") > "$TMP/$topic.want"
	sort "$TMP/$topic.got" | cmp -s - "$TMP/$topic.want" ||
		fail "$topic: the messages read back differ from messages 1..$n"
}

# ---- 1. anonymous publish ------------------------------------------------------------

make_netns "$NS"
in_ns "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
	2>/dev/null || true
in_ns "$NS" ip link add "$VA" type veth peer name "$VB" || fail "veth"
in_ns "$NS" ip link set "$VA" up || fail "link up $VA"
in_ns "$NS" ip link set "$VB" up || fail "link up $VB"
OUT=$TMP/anon-out.pcap
start_sluiced anon "$NS" "" -- \
	--port "net_pcap0,rx_iface_in=$VA,tx_pcap=$OUT" --ip "$BROKER" \
	--port "net_tap0,iface=$TAP" --ip "$TAP_BROKER" \
	--topic pcap-pub:4 --topic pcap-mpub:4 --topic pcap-noack:2 --anon-publish --log-mb 16
in_ns "$NS" ip addr add "$TAP_HOST/24" dev "$TAP" || fail "address $TAP"
in_ns "$NS" ip link set "$TAP" up || fail "link up $TAP"
MAC=$(ctl_py anon "[p for p in d['ports'] if p['name'] == 'net_pcap0'][0]['mac']" status) ||
	fail "status"
log "net_pcap0 MAC $MAC"
ctl anon channel create pcap-pub check > /dev/null || fail "channel create pcap-pub"
ctl anon channel create pcap-mpub check > /dev/null || fail "channel create pcap-mpub"
COMMON=(--dst-mac "$MAC" --dst-ip "$BROKER")

# replay NAME FILE TOPIC ANON_TOTAL MSGS: replay FILE, wait until anonymous_publishes reaches
# ANON_TOTAL (the frames of every replay so far) and TOPIC holds MSGS messages, then check
# that neither goes beyond
replay() {
	in_ns "$NS" python3 "$TMP/inject.py" "$VB" "$2" "$CTL" "$TMP/anon.sock" net_pcap0 \
		>> "$TMP/inject.log" || fail "replay $2: $(tail -n 1 "$TMP/inject.log")"
	wait_for 20 "$1: anonymous publishes" at_least "$4" workers_sum anon anonymous_publishes
	wait_for 20 "$1: messages in $3" at_least "$5" topic_total anon "$3"
	[ "$(workers_sum anon anonymous_publishes)" -eq "$4" ] ||
		fail "$1: $(workers_sum anon anonymous_publishes) anonymous publishes, expected $4"
	[ "$(topic_total anon "$3")" -eq "$5" ] ||
		fail "$1: $(topic_total anon "$3") messages in $3, expected $5"
	ctl anon --json topic info "$3" > "$TMP/$3.info" || fail "topic info $3"
}

log "$N_PUB PUB frames"
gen "$TMP/pub.pcap" "${COMMON[@]}" --topic pcap-pub --count $N_PUB --size 64
replay PUB "$TMP/pub.pcap" pcap-pub $N_PUB $N_PUB
wait_for 20 "$N_PUB OKs in $OUT" at_least $N_PUB n_answers "$OUT"
python3 "$TMP/answers.py" check "$OUT" --n $N_PUB --expect ok --req-op 2 --gen-mac $GEN_MAC \
	--gen-ip $GEN_IP --broker-ip "$BROKER" --sports $SPORTS --topic-info "$TMP/pcap-pub.info" ||
	fail "PUB answers"
SKIP=$N_PUB

log "$N_MPUB MPUB frames of $BATCH messages"
gen "$TMP/mpub.pcap" "${COMMON[@]}" --topic pcap-mpub --count $N_MPUB --batch $BATCH --size 64
replay MPUB "$TMP/mpub.pcap" pcap-mpub $((N_PUB + N_MPUB)) $((N_MPUB * BATCH))
wait_for 20 "$N_MPUB OKs in $OUT" at_least $((SKIP + N_MPUB)) n_answers "$OUT"
python3 "$TMP/answers.py" check "$OUT" --skip $SKIP --n $N_MPUB --expect ok --req-op 3 \
	--batch $BATCH --gen-mac $GEN_MAC --gen-ip $GEN_IP --broker-ip "$BROKER" --sports $SPORTS \
	--topic-info "$TMP/pcap-mpub.info" || fail "MPUB answers"
SKIP=$((SKIP + N_MPUB))

log "$N_NOACK NOACK PUB frames"
gen "$TMP/noack.pcap" "${COMMON[@]}" --topic pcap-noack --count $N_NOACK --size 100 --noack
replay NOACK "$TMP/noack.pcap" pcap-noack $((N_PUB + N_MPUB + N_NOACK)) $N_NOACK
# a last frame that is answered (ERR: no such topic): once its answer is in the file, an
# answer to any NOACK frame would be there too
gen "$TMP/last.pcap" "${COMMON[@]}" --topic pcap-none --count 1
in_ns "$NS" python3 "$TMP/inject.py" "$VB" "$TMP/last.pcap" "$CTL" "$TMP/anon.sock" net_pcap0 \
	>> "$TMP/inject.log" || fail "replay last.pcap"
wait_for 20 "the answer to the last frame" at_least $((SKIP + 1)) n_answers "$OUT"
python3 "$TMP/answers.py" check "$OUT" --skip $SKIP --n 1 --expect err --code $SL_E_TOPIC \
	--req-op 2 --gen-mac $GEN_MAC --gen-ip $GEN_IP --broker-ip "$BROKER" --sports $SPORTS ||
	fail "NOACK frames were answered (or the last frame's answer is wrong)"

[ "$(workers_sum anon errors_sent)" -eq 1 ] || fail "errors sent: $(workers_sum anon errors_sent)"
[ "$(workers_sum anon sessions_created)" -eq 0 ] || fail "anonymous publishes opened sessions"

log "messages read back through the tap port"
expect_msgs pcap-pub $N_PUB
expect_msgs pcap-mpub $((N_MPUB * BATCH))
stop_pid "$SLUICED_PID" || fail "sluiced (anon) exited with $? on SIGTERM"

# ---- 2. without --anon-publish -------------------------------------------------------

# net_pcap's MAC is 02:70:63:61:70:<n> for the n-th net_pcap port of a process; these files
# are read when the port starts, so they are made before: checked against status below
PMAC0=02:70:63:61:70:00
PMAC1=02:70:63:61:70:01
log "without --anon-publish: PUB and NOACK MPUB frames from pcap files"
gen "$TMP/pub0.pcap" --dst-mac $PMAC0 --dst-ip "$BROKER" --topic pcap-pub --count $N_PUB
gen "$TMP/mpub1.pcap" --dst-mac $PMAC1 --dst-ip "$BROKER2" --topic pcap-mpub --count $N_MPUB \
	--batch $BATCH --noack
OUT0=$TMP/noanon-out0.pcap
OUT1=$TMP/noanon-out1.pcap
start_sluiced noanon "" "" -- \
	--port "net_pcap0,rx_pcap=$TMP/pub0.pcap,tx_pcap=$OUT0" --ip "$BROKER" \
	--port "net_pcap1,rx_pcap=$TMP/mpub1.pcap,tx_pcap=$OUT1" --ip "$BROKER2" \
	--topic pcap-pub:4 --topic pcap-mpub:4 --log-mb 16
[ "$(ctl_py noanon "' '.join(p['mac'] for p in d['ports'])" status)" = "$PMAC0 $PMAC1" ] ||
	fail "net_pcap MACs are not $PMAC0 $PMAC1: $(ctl_py noanon "d['ports']" status)"
wait_for 20 "ERR answers" at_least $((N_PUB + N_MPUB)) workers_sum noanon errors_sent
wait_for 20 "$N_PUB ERRs in $OUT0" at_least $N_PUB n_answers "$OUT0"
wait_for 20 "$N_MPUB ERRs in $OUT1" at_least $N_MPUB n_answers "$OUT1"
python3 "$TMP/answers.py" check "$OUT0" --n $N_PUB --expect err --code $SL_E_SESSION \
	--req-op 2 --gen-mac $GEN_MAC --gen-ip $GEN_IP --broker-ip "$BROKER" --sports $SPORTS ||
	fail "PUB answers without --anon-publish"
python3 "$TMP/answers.py" check "$OUT1" --n $N_MPUB --expect err --code $SL_E_SESSION \
	--req-op 3 --gen-mac $GEN_MAC --gen-ip $GEN_IP --broker-ip "$BROKER2" --sports $SPORTS ||
	fail "NOACK MPUB answers without --anon-publish"
# net_pcap stops receiving at the end of its file: exactly the frames of the files
[ "$(ctl_py noanon "sum(p['rx_packets'] for p in d['ports'])" stats ports)" -eq \
	$((N_PUB + N_MPUB)) ] || fail "ports received $(ctl_py noanon "d['ports']" stats ports)"
[ "$(workers_sum noanon errors_sent)" -eq $((N_PUB + N_MPUB)) ] ||
	fail "errors sent: $(workers_sum noanon errors_sent)"
[ "$(workers_sum noanon anonymous_publishes)" -eq 0 ] || fail "anonymous publishes counted"
[ "$(topic_total noanon pcap-pub)" -eq 0 ] || fail "messages written to pcap-pub"
[ "$(topic_total noanon pcap-mpub)" -eq 0 ] || fail "messages written to pcap-mpub"
stop_pid "$SLUICED_PID" || fail "sluiced (noanon) exited with $? on SIGTERM"
log "PASS"
