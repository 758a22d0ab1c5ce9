#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Hostile protocol input against a live sluiced (run by hostile_proto.sh inside the test's
# namespace, on the kernel side of the node's net_tap port). Two modes:
#
#   data  (a node with --data-dir and --log-mb 16):
#     - amplification: UDP and ICMP echo with forged sources (limited and directed
#       broadcast, multicast, loopback, 0.0.0.0, the node's own address, UDP port 0, a
#       broadcast or multicast source MAC) sent raw on the tap: none is answered, each is
#       counted as drop_bad_source (`sluicectl stats workers`); the same from a real
#       address is answered;
#     - SET_OFFSET at the extremes: count 2^64-1 is the end (saturated), never the start;
#     - the idempotency window (docs/protocol.md 8.4): a seq more than 127 behind the
#       highest is refused with SL_E_SEQ_OLD and not executed;
#     - bundles (several frames in a datagram): run in order, answers shared, a resent
#       bundle answered from the window, a bundle with wrong framing refused whole;
#     - small messages: more than 131,072 PUBs of 24 bytes with no channel keep being
#       accepted (retention trims memory by index slots too); then a channel that is
#       behind does not stop publishing (memory is a cache of the disk log) and, consuming,
#       it gets every message, read back from disk.
#   mem   (a node without --data-dir, --log-mb 1, SUB channel caps and idle expiry):
#     - a channel that is behind: SL_E_FULL (temporary back pressure) while it is
#       behind, accepting again once it has consumed;
#     - channels created by SUB: at most 2 per client address and 4 per partition
#       (SL_E_LIMIT beyond), joining is never refused, an operator's channels do not count;
#     - an idle anonymous durable channel is deleted after --sub-channel-idle-s;
#     - sessions: a session id used from another port is refused (SL_E_SESSION); a HELLO
#       flood from one address gets at most --max-sessions-per-source (8) sessions and
#       SL_E_LIMIT beyond, while another address still gets one.
import json, os, select, socket, struct, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import slproto  # noqa: E402
from slproto import E, OP, addr, check, err_code, hdr, ok_fields, pub_body  # noqa: E402

MODE, BROKER, IFACE, CTL, CTL_SOCK = sys.argv[1:6]
HOSTS = sys.argv[6:]            # the kernel side's addresses: HOSTS[0] is the main one
PORT = 5150
def ctl(*args):
    return slproto.ctl_json(CTL, CTL_SOCK, *args)


def worker_stats():
    """Counters summed over the workers: drops by reason and sessions created."""
    ws = ctl("stats", "workers")["workers"]
    drops = {}
    for w in ws:
        for k, v in w["drops"].items():
            drops[k] = drops.get(k, 0) + v
    return {"drops": drops, "sessions_created": sum(w["sessions_created"] for w in ws)}


def part_info(topic):
    return ctl("topic", "info", topic)["partition_info"][0]


class Client:
    """One session from a local address; answers matched by seq, MSGs kept aside."""

    def __init__(self, src=None):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        if src:
            self.s.bind((src, 0))
        self.dst = (BROKER, PORT)
        self.msgs = []
        self.seq = 0
        d = self.xchg(hdr(OP["HELLO"], struct.pack(">II", 0, 0)), OP["WELCOME"])
        self.sess = struct.unpack(">Q", d[32:40])[0]
        self.welcome_flags = struct.unpack(">H", d[4:6])[0]

    def recv(self, timeout):
        r, _, _ = select.select([self.s], [], [], timeout)
        if not r:
            return None
        return self.s.recv(65535)

    def xchg(self, frame, want_op=None, seq=None, timeout=2.0, tries=5):
        """Send frame, return the answer with its seq (MSGs are kept); resend on silence."""
        if seq is None:
            seq = struct.unpack(">Q", frame[16:24])[0]
        for _ in range(tries):
            self.s.sendto(frame, self.dst)
            end = time.time() + timeout
            while time.time() < end:
                d = self.recv(end - time.time())
                if d is None:
                    break
                if d[3] == OP["MSG"]:
                    self.msgs.append(d)
                    continue
                if struct.unpack(">Q", d[16:24])[0] == seq and (want_op is None or
                                                                 d[3] in (want_op, OP["ERR"])):
                    return d
        return None

    def req(self, op, body, seq=None):
        if seq is None:
            self.seq += 1
            seq = self.seq
        return self.xchg(hdr(op, body, self.sess, seq), seq=seq)

    def publish_many(self, topic, n, body_of, window=48, stall_s=15.0, limit_s=300.0):
        """Publish n PUBs (pipelined, at most `window` seqs apart, each retried on
        SL_E_FULL, and on SL_E_OUT_OF_ORDER behind one, with back-off as the C client
        does). Returns (ids in order, FULL answers, other errors). Stops when nothing is
        acknowledged for stall_s."""
        first_seq = self.seq + 1
        frames = {}
        acked = {}
        fulls = others = 0
        next_i = 0
        pending = {}    # seq -> time sent
        retry_at = {}   # seq -> time to resend (after FULL)
        start = last_progress = time.time()
        base = first_seq
        while len(acked) < n:
            now = time.time()
            if now - last_progress > stall_s or now - start > limit_s:
                break
            # new requests, never more than `window` seqs past the oldest unacknowledged
            while next_i < n and first_seq + next_i - base < window:
                seq = first_seq + next_i
                frames[seq] = hdr(OP["PUB"], pub_body(topic, body_of(next_i)), self.sess, seq)
                self.s.sendto(frames[seq], self.dst)
                pending[seq] = now
                next_i += 1
            for seq in [s for s, t in retry_at.items() if t <= now]:
                del retry_at[seq]
                self.s.sendto(frames[seq], self.dst)
                pending[seq] = now
            d = self.recv(0.05)
            if d is None:
                for seq, t in list(pending.items()):
                    if time.time() - t > 0.5:
                        self.s.sendto(frames[seq], self.dst)
                        pending[seq] = time.time()
                continue
            if d[3] == OP["MSG"]:
                self.msgs.append(d)
                continue
            seq = struct.unpack(">Q", d[16:24])[0]
            if seq not in pending:
                continue
            del pending[seq]
            if d[3] == OP["OK"]:
                acked[seq] = ok_fields(d)[1]
                last_progress = time.time()
                while base in acked:
                    base += 1
            elif err_code(d) in (E["FULL"], E["OUT_OF_ORDER"]):
                fulls += err_code(d) == E["FULL"]
                retry_at[seq] = time.time() + min(0.002 * (1 + fulls % 64), 0.1)
            else:
                others += 1
                print("unexpected answer to PUB seq %d: code %s" % (seq, err_code(d)))
                acked[seq] = None
                last_progress = time.time()
                while base in acked:
                    base += 1
        self.seq = first_seq + next_i - 1
        return [acked[s] for s in sorted(acked)], fulls, others

    def consume(self, topic, chan, want, rdy=512, stall_s=10.0):
        """Take MSGs of chan and FIN them in batches until `want` messages were seen or
        nothing came for stall_s. Returns the message ids in arrival order."""
        ids = []
        self.req(OP["RDY"], addr(topic, chan) + struct.pack(">I", rdy))
        last = time.time()
        batch = []

        def fin():
            if batch:
                self.seq += 1
                body = addr(topic, chan) + struct.pack(">H", len(batch)) + b"".join(
                    struct.pack(">Q", i) for i in batch)
                self.s.sendto(hdr(OP["FIN"], body, self.sess, self.seq, flags=1), self.dst)
                batch.clear()

        while len(ids) < want and time.time() - last < stall_s:
            if self.msgs:
                d = self.msgs.pop(0)
            else:
                d = self.recv(0.2)
                if d is None:
                    fin()
                    # keep the session alive while waiting
                    self.seq += 1
                    self.s.sendto(hdr(OP["NOP"], b"", self.sess, self.seq, flags=1), self.dst)
                    continue
            if d[3] != OP["MSG"]:
                continue
            mid = struct.unpack(">Q", d[48:56])[0]
            ids.append(mid)
            batch.append(mid)
            last = time.time()
            if len(batch) == 128:
                fin()
        fin()
        return ids


# ---------------------------------------------------------------------------------------
def raw_checksum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return (~s) & 0xFFFF


def amplification():
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))   # ETH_P_ALL
    raw.bind((IFACE, 0))
    my_mac = raw.getsockname()[4]
    bmac = bytes.fromhex(ctl("status")["ports"][0]["mac"].replace(":", ""))
    net = BROKER.rsplit(".", 1)[0]

    def frame(src_ip, src_mac=my_mac, udp_sport=40001, icmp=False):
        if icmp:
            l4 = struct.pack("!BBHHH", 8, 0, 0, 0x77, 1) + b"ping" * 4
            l4 = l4[:2] + struct.pack("!H", raw_checksum(l4)) + l4[4:]
            proto = 1
        else:
            payload = hdr(OP["HELLO"], struct.pack(">II", 0, 0), cookie=0xA4F1)
            l4 = struct.pack("!HHHH", udp_sport, PORT, 8 + len(payload), 0) + payload
            proto = 17
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0,
                         socket.inet_aton(src_ip), socket.inet_aton(BROKER))
        ip = ip[:10] + struct.pack("!H", raw_checksum(ip)) + ip[12:]
        return bmac + src_mac + b"\x08\x00" + ip + l4

    def answers(window=0.5):
        """Frames the broker sent in the next `window` seconds: UDP from its port, or ICMP
        echo replies."""
        got = []
        end = time.time() + window
        while True:
            left = end - time.time()
            if left <= 0:
                return got
            r, _, _ = select.select([raw], [], [], left)
            if not r:
                return got
            f = raw.recv(65535)
            if f[6:12] != bmac or f[12:14] != b"\x08\x00":
                continue
            proto = f[23]
            ihl = (f[14] & 0xF) * 4
            l4 = f[14 + ihl:]
            if (proto == 17 and struct.unpack("!H", l4[0:2])[0] == PORT) or \
               (proto == 1 and l4[0] == 0):
                got.append((socket.inet_ntoa(f[30:34]), proto))

    answers(0.2)    # drain
    before = worker_stats()
    # controls: from the real address both are answered
    raw.send(frame(HOSTS[0]))
    a = answers()
    check(any(p == 17 and d == HOSTS[0] for d, p in a), "HELLO from %s: answered" % HOSTS[0])
    raw.send(frame(HOSTS[0], icmp=True))
    a = answers()
    check(any(p == 1 and d == HOSTS[0] for d, p in a), "ping from %s: answered" % HOSTS[0])

    bad = [("255.255.255.255", "limited broadcast"), (net + ".255", "directed broadcast"),
           ("224.0.0.1", "multicast"), ("239.1.2.3", "multicast"),
           ("240.0.0.9", "reserved"), ("127.0.0.1", "loopback"), ("0.0.0.0", "zero"),
           ("0.0.0.7", "this network"), (BROKER, "the node's own address")]
    sent = 0
    for ip, what in bad:
        for icmp in (False, True):
            raw.send(frame(ip, icmp=icmp))
            sent += 1
            a = answers(0.3)
            check(a == [], "%s from %s (%s): no answer (%s)" %
                  ("ping" if icmp else "HELLO", ip, what, a))
    for mac, what in ((b"\xff" * 6, "broadcast"), (b"\x01\x00\x5e\x00\x00\x01", "multicast")):
        for icmp in (False, True):
            raw.send(frame(HOSTS[0], src_mac=mac, icmp=icmp))
            sent += 1
            a = answers(0.3)
            check(a == [], "%s from a %s source MAC: no answer (%s)" %
                  ("ping" if icmp else "HELLO", what, a))
    raw.send(frame(HOSTS[0], udp_sport=0))
    sent += 1
    a = answers(0.3)
    check(a == [], "HELLO from UDP port 0: no answer (%s)" % a)
    after = worker_stats()
    got = after["drops"].get("drop_bad_source", 0) - before["drops"].get("drop_bad_source", 0)
    check(got == sent, "every forged source counted as drop_bad_source (%d of %d)" %
          (got, sent))
    check(after["sessions_created"] - before["sessions_created"] == 1,
          "only the real HELLO opened a session (%d)" %
          (after["sessions_created"] - before["sessions_created"]))
    raw.close()


def set_offset_extremes(c):
    topic = b"so"
    last = None
    for i in range(10):
        last = ok_fields(c.req(OP["PUB"], pub_body(topic, b"so-%d" % i)))
    check(last is not None and last[1] == 10, "10 messages in 'so'")
    end_off = last[2] + 32 + ((len(b"so-9") + 7) & ~7)
    d = c.req(OP["SUB"], addr(topic, b"x") + struct.pack(">BBI", 0, 0, 0))
    check(ok_fields(d) is not None, "SUB x (rdy 0)")

    def setoff(kind, value):
        return c.req(OP["SET_OFFSET"], addr(topic, b"x") + struct.pack(">B7xQ", kind, value))

    ok = ok_fields(setoff(1, 2**64 - 1))
    check(ok is not None and ok[1] == 11 and ok[3] == 10 and ok[2] == end_off,
          "SET_OFFSET count 2^64-1: the end, next id 11 at offset %d (got %s)" % (end_off, ok))
    ch = [x for x in part_info("so")["channels"] if x["name"] == "x"][0]
    check(ch["confirmed_count"] == 10 and ch["next_id"] == 11,
          "channel x is at the end (confirmed %d, next %d)" %
          (ch["confirmed_count"], ch["next_id"]))
    ok = ok_fields(setoff(1, 2**64 - 2))
    check(ok is not None and ok[1] == 11, "count 2^64-2: the end (%s)" % (ok,))
    # memory no longer holds 1..10 (the channel is at the end, they are durable: trimmed),
    # so a timestamp or an offset is looked up on disk and answered later (this crashed a
    # memory-durability topic: its completion had no ring)
    for _ in range(100):
        if part_info("so")["first_id"] == 11:
            break
        time.sleep(0.01)
    check(part_info("so")["first_id"] == 11, "memory of 'so' trimmed (all 10 on disk only)")
    ok = ok_fields(setoff(2, 2**64 - 1))
    check(ok is not None and ok[1] == 11, "timestamp 2^64-1: the end (%s)" % (ok,))
    ok = ok_fields(setoff(2, 0))
    check(ok is not None and ok[1] == 1 and ok[3] == 0,
          "timestamp 0, looked up on disk: the start (%s)" % (ok,))
    ok = ok_fields(setoff(0, 40))
    check(ok is not None and ok[1] == 2 and ok[2] == 40,
          "offset 40, looked up on disk: id 2 (%s)" % (ok,))
    d = setoff(0, 2**64 - 1)
    check(err_code(d) == E["INVAL"], "offset 2^64-1 (not a message): SL_E_INVAL (%s)" %
          err_code(d))
    ok = ok_fields(setoff(3, 2**64 - 1))
    check(ok is not None and ok[1] == 11, "end: the end (%s)" % (ok,))
    d = c.req(OP["SET_OFFSET"], addr(topic, b"x") + struct.pack(">B7xQ", 4, 1))
    check(err_code(d) == E["MALFORMED"], "kind 4: SL_E_MALFORMED (%s)" % err_code(d))
    # at the end nothing is delivered: a rewind would redeliver all 10
    c.msgs.clear()
    c.req(OP["RDY"], addr(topic, b"x") + struct.pack(">I", 16))
    c.recv(0.3)
    extra = c.recv(0.3)
    check(not c.msgs and (extra is None or extra[3] != OP["MSG"]),
          "nothing redelivered after SET_OFFSET past the end")
    ok = ok_fields(setoff(1, 0))
    check(ok is not None and ok[1] == 1 and ok[3] == 0, "count 0: the start (%s)" % (ok,))
    got = c.consume(topic, b"x", 10, rdy=16, stall_s=3)
    check(got == list(range(1, 11)), "then 1..10 are delivered again (%s)" % got[:12])
    c.req(OP["CLS"], addr(topic, b"x"))


def idempotency():
    c = Client()
    topic = b"idem"
    for s in range(1, 11):
        d = c.req(OP["PUB"], pub_body(topic, b"i%d" % s), seq=s)
        check(ok_fields(d) is not None and ok_fields(d)[1] == s, "seq %d: id %d" % (s, s))
    d = c.req(OP["PUB"], pub_body(topic, b"i500"), seq=500)
    check(ok_fields(d) is not None and ok_fields(d)[1] == 11, "seq 500 (a jump ahead): id 11")
    d = c.req(OP["PUB"], pub_body(topic, b"i20"), seq=20)
    check(err_code(d) == E["SEQ_OLD"], "seq 20 (480 behind 500, never seen): SL_E_SEQ_OLD (%s)"
          % ((err_code(d) if err_code(d) else ok_fields(d)),))
    d = c.req(OP["PUB"], pub_body(topic, b"i372"), seq=372)
    check(err_code(d) == E["SEQ_OLD"], "seq 372 (500 - 128): SL_E_SEQ_OLD (%s)" % err_code(d))
    d = c.req(OP["PUB"], pub_body(topic, b"i5"), seq=5)
    check(err_code(d) == E["SEQ_OLD"], "seq 5 (a retry 495 behind): SL_E_SEQ_OLD (%s)" %
          err_code(d))
    check(part_info("idem")["message_count"] == 11, "none of them was written (11 messages)")
    d = c.req(OP["PUB"], pub_body(topic, b"i373"), seq=373)
    check(ok_fields(d) is not None and ok_fields(d)[1] == 12,
          "seq 373 (inside the window, never seen): executed, id 12")
    d = c.req(OP["PUB"], pub_body(topic, b"i500"), seq=500)
    check(ok_fields(d) is not None and ok_fields(d)[1] == 11, "seq 500 again: the first answer")
    check(part_info("idem")["message_count"] == 12, "12 messages")
    # a non-publish request below the window is not executed either
    d = c.req(OP["SUB"], addr(topic, b"old") + struct.pack(">BBI", 0, 0, 1), seq=30)
    check(err_code(d) == E["SEQ_OLD"] and
          not any(x["name"] == "old" for x in part_info("idem")["channels"]),
          "SUB with seq 30: SL_E_SEQ_OLD, no channel created")


def bundles():
    """Several frames in one datagram (protocol.md section 1, bundles): WELCOME says the
    broker takes them; a bundle of PUBs is run frame by frame, in order, and their answers
    share datagrams; a bundle sent again is answered from the idempotency window; a bundle
    whose framing is wrong is answered ERR SL_E_MALFORMED on its first frame and none of
    its frames runs; an answer opcode inside a bundle is dropped, its neighbours run."""
    c = Client()
    check(c.welcome_flags & slproto.F_BUNDLE, "WELCOME carries F_BUNDLE")
    topic = b"bundled"
    B = slproto.F_BUNDLE

    def pubs(seq0, n, tag):
        return b"".join(hdr(OP["PUB"], pub_body(topic, b"%s-%d" % (tag, seq0 + i)), c.sess,
                            seq0 + i, flags=B) for i in range(n))

    def answers(seqs, timeout=5.0):
        got, dgrams = {}, 0
        end = time.time() + timeout
        while time.time() < end and len(got) < len(seqs):
            d = c.recv(end - time.time())
            if d is None:
                break
            dgrams += 1
            for f in slproto.frames(d):
                q = slproto.answer_seq(f)
                if q in seqs:
                    got[q] = f
        return got, dgrams

    def bundles_out():
        return sum(w["bundles_out"] for w in ctl("stats", "workers")["workers"])

    out0 = bundles_out()
    seq = c.seq + 1
    ids = []
    for k in range(10):
        c.s.sendto(pubs(seq, 3, b"b"), c.dst)
        got, _ = answers(set(range(seq, seq + 3)))
        ok = [ok_fields(got.get(q)) for q in range(seq, seq + 3)]
        check(all(o is not None for o in ok) and
              all(struct.unpack(">H", got[q][4:6])[0] & B for q in got),
              "bundle %d of 3 PUBs: 3 OKs, each flagged F_BUNDLE (%s)" % (k, [
                  (q, got[q][3], len(got[q]), err_code(got[q]), slproto.err_text(got[q]))
                  for q in sorted(got)]))
        ids += [o[1] for o in ok if o is not None]
        seq += 3
    check(ids == list(range(ids[0], ids[0] + 30)) if ids else False,
          "30 PUBs in 10 bundles: ids consecutive, in the bundles' order")
    check(bundles_out() > out0, "answers shared datagrams (bundles_out %d -> %d)" %
          (out0, bundles_out()))
    n0 = part_info("bundled")["message_count"]
    c.s.sendto(pubs(seq - 3, 3, b"b"), c.dst)
    got, _ = answers(set(range(seq - 3, seq)))
    check(len(got) == 3 and all(ok_fields(f) is not None for f in got.values()) and
          [ok_fields(got[q])[1] for q in range(seq - 3, seq)] == ids[-3:],
          "the last bundle again: the first answers, from the idempotency window")
    check(part_info("bundled")["message_count"] == n0, "nothing written twice")

    def bad(frames_bytes, what):
        drops0 = worker_stats()["drops"].get("bad_bundle", 0)
        c.s.sendto(frames_bytes, c.dst)
        got, _ = answers({seq})
        check(err_code(got.get(seq)) == E["MALFORMED"], "%s: ERR SL_E_MALFORMED on the first "
              "frame (%s)" % (what, err_code(got.get(seq))))
        check(worker_stats()["drops"].get("bad_bundle", 0) == drops0 + 1,
              "%s: counted as bad_bundle" % what)
        check(part_info("bundled")["message_count"] == n0, "%s: no frame of it ran" % what)

    two = pubs(seq, 2, b"x")
    bad(two[:-1], "a bundle whose last frame runs past the datagram")
    bad(two + b"\x53\x4c\x01", "a bundle with 3 bytes after its last frame")
    second = hdr(OP["PUB"], pub_body(topic, b"noflag"), c.sess, seq + 1)
    bad(pubs(seq, 1, b"x") + second, "a bundle whose second frame lacks F_BUNDLE")
    bad(pubs(seq, 1, b"x") + b"XY" + second[2:], "a bundle whose second frame has no magic")
    # an answer opcode inside a bundle: dropped, its neighbours run
    fake = hdr(OP["OK"], b"\0" * 32, c.sess, seq + 1, flags=B)
    c.s.sendto(pubs(seq, 1, b"y") + fake + pubs(seq + 2, 1, b"y"), c.dst)
    got, _ = answers({seq, seq + 2})
    check(ok_fields(got.get(seq)) is not None and ok_fields(got.get(seq + 2)) is not None,
          "an OK frame between two PUBs of a bundle: both PUBs acknowledged")
    check(part_info("bundled")["message_count"] == n0 + 2, "... and written (%d messages)" %
          part_info("bundled")["message_count"])
    c.seq = seq + 2


def small_messages(c):
    body = lambda i: b"%024d" % i   # 24 bytes
    info = part_info("small")
    slots = info.get("log_index_slots")
    check(slots == 131072, "16 MiB partition: 131072 index slots (%s)" % slots)
    n1 = 140000
    t0 = time.time()
    ids, fulls, others = c.publish_many(b"small", n1, body)
    print("published %d in %.1f s, %d FULL answers (retried)" % (len(ids), time.time() - t0,
                                                                 fulls), flush=True)
    # (a publish retried after SL_E_FULL gets a later id than the ones sent after it)
    check(len(ids) == n1 and sorted(ids) == list(range(1, n1 + 1)) and others == 0,
          "%d PUBs of 24 bytes with no channel: all accepted, ids 1..%d (%d acked, last %s)" %
          (n1, n1, len(ids), max(ids) if ids else None))
    info = part_info("small")
    check(info.get("log_messages", n1) <= (slots or 131072) // 2 and info["first_id"] > 1,
          "memory was trimmed by index slots (first id %d, %s in memory)" %
          (info["first_id"], info.get("log_messages")))
    # a channel that is behind: SUB with no credit, then more publishes
    d = c.req(OP["SUB"], addr(b"small", b"behind") + struct.pack(">BBI", 0, 0, 0))
    check(ok_fields(d) is not None, "SUB 'behind' (rdy 0)")
    start = [x for x in part_info("small")["channels"] if x["name"] == "behind"][0]["next_id"]
    check(start == info["first_id"],
          "a channel created by SUB starts at the oldest message in memory (%d, %d)" %
          (start, info["first_id"]))
    n2 = 140000
    ids, fulls2, others = c.publish_many(b"small", n2, lambda i: body(n1 + i))
    check(len(ids) == n2 and sorted(ids) == list(range(n1 + 1, n1 + n2 + 1)) and others == 0,
          "%d more with the channel behind: all accepted (last id %s, %d FULL retried)" %
          (n2, max(ids) if ids else None, fulls2))
    d = c.req(OP["PUB"], pub_body(b"small", body(n1 + n2)))
    check(ok_fields(d) is not None, "and one more: accepted at once")
    want = n1 + n2 + 1 - start + 1
    t0 = time.time()
    got = c.consume(b"small", b"behind", want)
    print("consumed %d in %.1f s" % (len(got), time.time() - t0), flush=True)
    check(len(got) == want and sorted(set(got)) == list(range(start, n1 + n2 + 2)),
          "the channel consumes all %d from %d on (got %d, first %s, last %s)" %
          (want, start, len(got), got[0] if got else None, got[-1] if got else None))
    info = part_info("small")
    subprocess.run([CTL, "-s", CTL_SOCK, "channel", "create", "small", "op"],
                   capture_output=True, timeout=30)
    check(info["storage"]["disk_reads"] > 0, "messages older than memory came from disk (%d)"
          % info["storage"]["disk_reads"])


def mem_behind(c):
    topic = b"mem"
    body = lambda i: b"%024d" % i
    d = c.req(OP["SUB"], addr(topic, b"slow") + struct.pack(">BBI", 0, 0, 0))
    check(ok_fields(d) is not None, "SUB 'slow' (rdy 0): a consumer that is behind")
    q = Client()
    for rnd in range(2):
        # a session of its own per round: it gives up on the publishes still refused when
        # it stops, so its later ones would wait behind them (protocol.md 8, rule 10)
        p = Client()
        ids, fulls, others = p.publish_many(topic, 1000000, body, stall_s=1.0)
        n = len(ids)
        check(fulls > 0 and n > 1000, "round %d: %d accepted, then SL_E_FULL (%d)" %
              (rnd, n, fulls))
        d = p.req(OP["PUB"], pub_body(topic, b"z" * 24))
        check(err_code(d) == E["OUT_OF_ORDER"], "round %d: that session's next publish "
              "waits behind its refused ones: SL_E_OUT_OF_ORDER (%s)" % (rnd, err_code(d)))
        # the same publish of another session, sent again: refused every time
        q.seq += 1
        probe = q.seq
        answers = [q.req(OP["PUB"], pub_body(topic, b"x" * 24), seq=probe)
                   for _ in range(3)]
        codes = [err_code(d) for d in answers]
        check(codes == [E["FULL"]] * 3, "round %d: FULL again and again while it is behind (%s)"
              % (rnd, codes))
        text = answers[0][40:].decode(errors="replace") if answers[0] else ""
        check("a channel is behind" in text and "retry later" in text,
              "round %d: the ERR text says why and that it is temporary (%r)" % (rnd, text))
        got = c.consume(topic, b"slow", n, rdy=512)
        check(len(got) == n, "round %d: it consumes %d" % (rnd, len(got)))
        d = None
        for _ in range(50):     # the next millisecond tick frees the log
            d = q.req(OP["PUB"], pub_body(topic, b"x" * 24), seq=probe)
            if ok_fields(d) is not None:
                break
            time.sleep(0.01)
        check(ok_fields(d) is not None, "round %d: accepting again once it has consumed" % rnd)
        c.consume(topic, b"slow", 1, rdy=512, stall_s=2)
        c.req(OP["RDY"], addr(topic, b"slow") + struct.pack(">I", 0))
        p.req(OP["CLS"], addr(b"", b""))
        time.sleep(0.05)
    q.req(OP["CLS"], addr(b"", b""))


def sub_caps():
    topic = b"caps"
    a, a2 = Client(HOSTS[0]), Client(HOSTS[0])
    b, c = Client(HOSTS[1]), Client(HOSTS[2])

    def sub(cl, chan, flags=0):
        return cl.req(OP["SUB"], addr(topic, chan) + struct.pack(">BBI", flags, 0, 1))

    check(ok_fields(sub(a, b"a1")) is not None and ok_fields(sub(a, b"a2")) is not None,
          "address A creates 2 channels by SUB")
    check(err_code(sub(a, b"a3")) == E["LIMIT"], "a third from A: SL_E_LIMIT")
    check(err_code(sub(a2, b"a3", 2)) == E["LIMIT"],
          "from another session of A's address, ephemeral: SL_E_LIMIT")
    check(ok_fields(sub(b, b"b1")) is not None and ok_fields(sub(b, b"b2")) is not None,
          "address B creates 2")
    check(err_code(sub(c, b"c1")) == E["LIMIT"], "address C: the partition has 4: SL_E_LIMIT")
    check(ok_fields(sub(c, b"a1")) is not None, "C joins A's channel: allowed")
    subprocess.run([CTL, "-s", CTL_SOCK, "channel", "create", "caps", "opchan"],
                   capture_output=True, timeout=30)
    info = part_info("caps")
    names = {x["name"]: x for x in info["channels"]}
    check(set(names) == {"a1", "a2", "b1", "b2", "opchan"} and
          [names[n]["anonymous"] for n in ("a1", "a2", "b1", "b2", "opchan")] ==
          [True, True, True, True, False],
          "4 anonymous channels and the operator's (%s)" % sorted(names))
    check(info["sub_channels_refused"] == 3, "3 SUBs refused (%d)" %
          info["sub_channels_refused"])
    # expiry: b2's subscriber leaves; after --sub-channel-idle-s (1 s) it is deleted
    b.req(OP["CLS"], addr(topic, b"b2"))
    t0 = time.time()
    gone = False
    while time.time() - t0 < 10:
        for cl in (a, b, c):    # keep the other subscriptions' sessions alive
            cl.req(OP["NOP"], b"")
        names = {x["name"] for x in part_info("caps")["channels"]}
        if "b2" not in names:
            gone = True
            break
        time.sleep(0.1)
    took = time.time() - t0
    check(gone and took >= 0.9, "idle anonymous channel b2 deleted after %.1f s" % took)
    info = part_info("caps")
    names = {x["name"] for x in info["channels"]}
    check(names == {"a1", "a2", "b1", "opchan"} and info["sub_channels_expired"] == 1,
          "the subscribed ones and the operator's stay (%s, expired %d)" %
          (sorted(names), info["sub_channels_expired"]))
    check(ok_fields(sub(c, b"c1")) is not None, "room again: C creates c1")


def sessions():
    """A session answers only to the address and port that opened it; one address cannot
    take every session (the node runs with --max-sessions-per-source 8)."""
    a = Client(HOSTS[0])
    thief = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    thief.bind((HOSTS[0], 0))
    a.seq += 1
    thief.sendto(hdr(OP["NOP"], b"", sess=a.sess, seq=a.seq), (BROKER, PORT))
    r, _, _ = select.select([thief], [], [], 2.0)
    d = thief.recv(65535) if r else None
    check(err_code(d) == E["SESSION"],
          "another port of the same address using A's session id: SL_E_SESSION (%s)" %
          (err_code(d),))
    d = a.req(OP["NOP"], b"")
    check(d is not None and d[3] == OP["OK"], "A's own socket still uses its session")
    thief.close()
    welcomed = limited = 0
    socks = []
    for _ in range(20):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((HOSTS[2], 0))
        socks.append(s)
        s.sendto(hdr(OP["HELLO"], struct.pack(">II", 0, 0)), (BROKER, PORT))
        r, _, _ = select.select([s], [], [], 2.0)
        d = s.recv(65535) if r else None
        if d is not None and d[3] == OP["WELCOME"]:
            welcomed += 1
        elif err_code(d) == E["LIMIT"]:
            limited += 1
    check(welcomed <= 8 and limited >= 12,
          "a HELLO flood from one address: at most 8 sessions (%d), the rest SL_E_LIMIT (%d)"
          % (welcomed, limited))
    b = Client(HOSTS[1])
    check(b.sess != 0, "another address still opens a session during the flood")
    for s in socks:
        s.close()


def restarted():
    """After a restart over the same data directory: channels created by SUB are still
    anonymous (the channels file keeps the mark), an operator's are not."""
    chans = {x["name"]: x for x in part_info("so")["channels"]}
    check("x" in chans and chans["x"]["anonymous"] is True,
          "after a restart channel x (created by SUB) is still anonymous (%s)" %
          chans.get("x", {}).get("anonymous"))
    chans = {x["name"]: x for x in part_info("small")["channels"]}
    check("behind" in chans and chans["behind"]["anonymous"] is True and
          "op" in chans and chans["op"]["anonymous"] is False,
          "channel 'behind' too; the operator's 'op' is not (%s)" %
          {n: c.get("anonymous") for n, c in chans.items()})


# HOSTILE_PHASES=a,b,... runs only those phases (to check one against another build)
PHASES = os.environ.get("HOSTILE_PHASES", "").split(",") if os.environ.get("HOSTILE_PHASES") \
    else None


def want(phase):
    return PHASES is None or phase in PHASES


if MODE == "restart":
    restarted()
elif MODE == "data":
    if want("amplification"):
        amplification()
    main = Client()
    if want("set_offset"):
        set_offset_extremes(main)
    if want("idempotency"):
        idempotency()
    if want("bundles"):
        bundles()
    if want("small"):
        small_messages(main)
else:
    main = Client()
    if want("behind"):
        mem_behind(main)
    if want("caps"):
        sub_caps()
    if want("sessions"):
        sessions()

slproto.finish()
