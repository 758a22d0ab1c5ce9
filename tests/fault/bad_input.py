#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Bad input against a live sluiced (run by bad_input.sh inside the test's namespace):
# truncated, oversized, wrong-version, unknown-opcode and garbage packets at every layer.
# Each must be answered with the documented ERR code or dropped and counted; the broker must
# keep serving, and a full partition log must refuse publishes without losing an acked one.
import json, os, random, socket, struct, subprocess, sys, time

BROKER, IFACE, CTL, CTL_SOCK = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
PORT = 5150
passed = failed = 0

def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, flush=True)

def ctl(*args):
    out = subprocess.run([CTL, "-s", CTL_SOCK, "--json"] + list(args), capture_output=True,
                         text=True, timeout=30)
    return json.loads(out.stdout)

def worker_stats():
    return ctl("stats", "workers")["workers"][0]

E = dict(MALFORMED=1001, VERSION=1002, OPCODE=1003, SESSION=1004, TOPIC=1005,
         PARTITION=1006, FULL=1008, TOO_BIG=1009, SEQ_OLD=1010)

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.settimeout(2)
dst = (BROKER, PORT)

def hdr(op, body, sess=0, seq=1, flags=0, cookie=0xC00C1E, ver=1, blen=None):
    if blen is None:
        blen = len(body)
    return struct.pack(">HBBHHQQQ", 0x534C, ver, op, flags, blen, sess, seq, cookie) + body

def xchg(frame):
    sock.sendto(frame, dst)
    d, _ = sock.recvfrom(65535)
    return d

def no_answer(frame):
    sock.sendto(frame, dst)
    sock.settimeout(0.3)
    try:
        sock.recvfrom(65535)
        return False
    except socket.timeout:
        return True
    finally:
        sock.settimeout(2)

def err_code(d):
    if len(d) < 34 or d[3] != 0x81:
        return None
    return struct.unpack(">H", d[32:34])[0]

def pub_body(topic, msg, part=0):
    return struct.pack(">HBB", part, len(topic), 0) + topic + struct.pack(">I", len(msg)) + msg

# a session to use
d = xchg(hdr(0x01, struct.pack(">II", 0, 0)))
check(d[3] == 0x83, "HELLO answered with WELCOME")
sess = struct.unpack(">Q", d[32:40])[0]
max_msg = struct.unpack(">I", d[44:48])[0]
seq = 1

def nseq():
    global seq
    seq += 1
    return seq

before = worker_stats()

# --- sluice-layer errors, answered with ERR ---
check(err_code(xchg(hdr(0x02, pub_body(b"bad", b"x"), sess, nseq(), ver=9))) == E["VERSION"],
      "wrong version -> SL_E_VERSION")
check(err_code(xchg(hdr(0x3F, b"", sess, nseq()))) == E["OPCODE"], "unknown opcode -> SL_E_OPCODE")
f = hdr(0x02, pub_body(b"bad", b"hello"), sess, nseq())
check(err_code(xchg(f[:-3])) == E["MALFORMED"], "truncated datagram (body_len lies) -> MALFORMED")
body = pub_body(b"bad", b"hello")
body = body[:-5] + struct.pack(">I", 1000)[0:0] + b"hello"
bad_len = struct.pack(">HBB", 0, 3, 0) + b"bad" + struct.pack(">I", 999) + b"hello"
check(err_code(xchg(hdr(0x02, bad_len, sess, nseq()))) == E["MALFORMED"],
      "message length beyond the datagram -> MALFORMED")
check(err_code(xchg(hdr(0x02, pub_body(b"bad topic!", b"x"), sess, nseq()))) in (E["MALFORMED"], 1018),
      "invalid topic name -> error")
check(err_code(xchg(hdr(0x02, pub_body(b"nosuch", b"x"), sess, nseq()))) == E["TOPIC"],
      "unknown topic -> SL_E_TOPIC")
check(err_code(xchg(hdr(0x02, pub_body(b"bad", b"x", part=7), sess, nseq()))) == E["PARTITION"],
      "partition out of range -> SL_E_PARTITION")
big = b"B" * (max_msg + 1)
check(err_code(xchg(hdr(0x02, pub_body(b"bad", big), sess, nseq()))) == E["TOO_BIG"],
      "message over max_msg -> SL_E_TOO_BIG")
check(err_code(xchg(hdr(0x02, pub_body(b"bad", b"x"), 0x1234567, nseq()))) == E["SESSION"],
      "unknown session -> SL_E_SESSION")
mp = struct.pack(">HBB", 0, 3, 0) + b"bad" + struct.pack(">H", 2) + struct.pack(">I", 1) + b"a"
check(err_code(xchg(hdr(0x03, mp, sess, nseq()))) == E["MALFORMED"], "MPUB count lies -> MALFORMED")
# an answer opcode from a client is dropped, not answered
check(no_answer(hdr(0x80, b"\0" * 32, sess, nseq())), "client-sent OK frame is dropped")
# not sluice at all: dropped silently
check(no_answer(b"GET / HTTP/1.0\r\n\r\n"), "non-sluice datagram dropped")
check(no_answer(b""), "empty datagram dropped")
# an oversized datagram (fragmented by the kernel: fragments are dropped, never reassembled)
check(no_answer(hdr(0x02, pub_body(b"bad", b"F" * 4000), sess, nseq())), "fragmented datagram dropped")

# --- the broker still works and nothing was written by any of the above ---
d = xchg(hdr(0x02, pub_body(b"bad", b"valid"), sess, nseq()))
check(d[3] == 0x80, "valid PUB after bad input is acknowledged")
ok_id = struct.unpack(">Q", d[40:48])[0]
check(ok_id == 1, "no bad input was written (first id is 1, got %d)" % ok_id)

# --- garbage at the Ethernet/IP layer via a raw socket on the kernel side of the tap ---
raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
raw.bind((IFACE, 0))
mac_src = raw.getsockname()[4]
bmac = bytes.fromhex(ctl("status")["ports"][0]["mac"].replace(":", ""))
def ip_csum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    s = (s >> 16) + (s & 0xFFFF); s += s >> 16
    return (~s) & 0xFFFF
def eth_ip(payload, proto=17, frag=0, bad_csum=False, total=None, ihl=5):
    src = socket.inet_aton(BROKER[:-1] + "1"); dsta = socket.inet_aton(BROKER)
    tl = total if total is not None else 20 + len(payload)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tl, 1, frag, 64, proto, 0, src, dsta)
    c = ip_csum(h) ^ (0xFFFF if bad_csum else 0)
    h = h[:10] + struct.pack("!H", c) + h[12:]
    return bmac + mac_src + b"\x08\x00" + h + payload
udp = struct.pack("!HHHH", 40000, PORT, 8 + 4, 0) + b"abcd"
frames = [
    eth_ip(udp, bad_csum=True),                       # bad IP checksum
    eth_ip(udp, frag=0x2000),                         # fragment (MF)
    eth_ip(udp, total=2000),                          # total length beyond frame
    eth_ip(udp, ihl=3),                               # bad IHL
    eth_ip(udp, proto=6),                             # TCP
    eth_ip(struct.pack("!HHHH", 40000, PORT, 99, 0) + b"abcd"),  # UDP length lies
    eth_ip(struct.pack("!HHHH", 40000, 9, 12, 0) + b"abcd"),     # wrong port
    bmac + mac_src + b"\x86\xdd" + b"\0" * 40,        # IPv6
    bmac + mac_src + b"\x08\x00" + b"\x45",           # truncated IP
    bmac + mac_src + b"\x08\x00",                    # Ethernet header only
]
for fr in frames:
    raw.send(fr)
def settle():
    # until the worker has counted what reached it: its drop counters stand still (the
    # tap's kernel queue holds 500 frames; a slow machine or a sanitizer build drains it
    # slower than a loop of sendto fills it)
    prev = None
    for _ in range(200):
        cur = sum(worker_stats()["drops"].values())
        if cur == prev:
            return
        prev = cur
        time.sleep(0.05)
rnd = random.Random(1234)
for i in range(20000):
    n = rnd.randrange(1, 300)
    junk = bytes(rnd.randrange(256) for _ in range(n))
    if i % 2:
        sock.sendto(junk, dst)                        # garbage UDP payloads
    else:
        sock.sendto(hdr(rnd.randrange(256), junk, sess, nseq())[:rnd.randrange(1, 40 + n)], dst)
    if i % 250 == 249:
        settle()
sock.settimeout(0.5)
try:
    while True:
        sock.recvfrom(65535)
except socket.timeout:
    pass
sock.settimeout(2)
after = worker_stats()
dr = {k: after["drops"][k] - before["drops"].get(k, 0) for k in after["drops"]}
check(dr["drop_ip_cksum"] >= 1, "bad IP checksum counted")
check(dr["drop_fragment"] >= 2, "fragments counted")
check(dr["drop_proto"] >= 1, "other IP protocol counted")
check(dr["drop_udp_port"] >= 1, "wrong UDP port counted")
check(dr["drop_ethertype"] >= 1, "IPv6 counted")
check(dr["drop_short"] + dr["drop_ip_hdr"] + dr["drop_udp_len"] >= 3, "malformed headers counted")
check(dr["not_sluice"] >= 5000, "garbage datagrams counted (%d)" % dr["not_sluice"])
check(after["errors_sent"] > before["errors_sent"], "ERR frames counted")

# --- still alive, still exact ---
d = xchg(hdr(0x02, pub_body(b"bad", b"valid again"), sess, nseq()))
check(d[3] == 0x80 and struct.unpack(">Q", d[40:48])[0] == 2,
      "broker still serves after 20,000 garbage datagrams; nothing was written by them")

# --- a full log refuses publishes and keeps every acked one ---
acked = []
full = False
payload = b"P" * 1000
for i in range(100000):
    s = nseq()
    d = xchg(hdr(0x02, pub_body(b"small", payload + str(i).encode()), sess, s))
    if d[3] == 0x81:
        full = err_code(d) == E["FULL"]
        # a retry of the refused request gets the same answer and still writes nothing
        d2 = xchg(hdr(0x02, pub_body(b"small", payload + str(i).encode()), sess, s, flags=2))
        check(err_code(d2) == E["FULL"], "retry of a refused publish gets the same FULL")
        break
    acked.append(struct.unpack(">Q", d[40:48])[0])
check(full, "a full partition answers SL_E_FULL (after %d messages)" % len(acked))
info = ctl("topic", "info", "small")["partition_info"][0]
check(info["message_count"] == len(acked), "log holds exactly the %d acked messages (%d)" %
      (len(acked), info["message_count"]))
check(acked == list(range(1, len(acked) + 1)), "acked ids are consecutive")
check(info["full_errors"] >= 1, "full errors counted per partition")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
