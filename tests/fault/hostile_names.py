#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Hostile names and auto-creation floods against a live sluiced (run by hostile_names.sh
# inside the test's namespace). Modes:
#   names BROKER CTL CTL_SOCK     every bad name (PUB, MPUB, SUB, channel, control socket,
#                                 NUL bytes) is refused with SL_E_NAME / a clear error,
#                                 and creates nothing
#   flood BROKER CTL CTL_SOCK N   N publishes to N new topic names: every one answered
#                                 (OK, or SL_E_CAPACITY once there is no room), the first
#                                 attempt of a publish that creates a topic or is refused
#                                 answered without a retransmission, the limits kept
#   one BROKER TOPIC CODE         one publish to TOPIC, no retransmission: the answer must
#                                 be CODE (0: OK)
# Prints every failed check, then "N passed, M failed"; exits 1 on a failure.
import json, select, socket, struct, subprocess, sys, time

MODE, BROKER = sys.argv[1], sys.argv[2]
PORT = 5150
E = dict(TOPIC=1005, FULL=1008, EXISTS=1016, NAME=1018, CAPACITY=1024)
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, flush=True)


def done():
    print("%d passed, %d failed" % (passed, failed), flush=True)
    sys.exit(1 if failed else 0)


def ctl(ctl_bin, ctl_sock, *args):
    out = subprocess.run([ctl_bin, "-s", ctl_sock, "--json"] + list(args),
                         capture_output=True, text=True, timeout=30)
    try:
        return out.returncode, json.loads(out.stdout or "{}")
    except ValueError:
        return out.returncode, {"error": out.stdout + out.stderr}


def ctl_raw(ctl_sock, line):
    """Send one raw request line (bytes, may hold a NUL) to the control socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(ctl_sock)
    s.sendall(line)
    s.shutdown(socket.SHUT_WR)
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return buf.decode(errors="replace")


sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.settimeout(2)
dst = (BROKER, PORT)


def hdr(op, body, sess=0, seq=1, flags=0, cookie=0xC00C1E):
    return struct.pack(">HBBHHQQQ", 0x534C, 1, op, flags, len(body), sess, seq, cookie) + body


def xchg(frame):
    sock.sendto(frame, dst)
    try:
        d, _ = sock.recvfrom(65535)
        return d
    except socket.timeout:
        return None


def answer(d):
    """0 for OK, the ERR code, or None (no answer / not an answer)."""
    if d is None or len(d) < 32:
        return None
    if d[3] == 0x80:
        return 0
    if d[3] == 0x81 and len(d) >= 34:
        return struct.unpack(">H", d[32:34])[0]
    return None


def pub_body(topic, msg, part=0xFFFF):
    return struct.pack(">HBB", part, len(topic), 0) + topic + struct.pack(">I", len(msg)) + msg


def mpub_body(topic, msgs, part=0xFFFF):
    b = struct.pack(">HBB", part, len(topic), 0) + topic + struct.pack(">H", len(msgs))
    for m in msgs:
        b += struct.pack(">I", len(m)) + m
    return b


def sub_body(topic, chan, rdy=1, part=0):
    return (struct.pack(">HBB", part, len(topic), len(chan)) + topic + chan +
            struct.pack(">BBI", 0, 0, rdy))


def hello():
    for _ in range(5):  # UDP: a lost HELLO or WELCOME is sent again
        d = xchg(hdr(0x01, struct.pack(">II", 0, 0)))
        if d is not None:
            break
    assert d is not None and d[3] == 0x83, "no WELCOME: %r" % (d[:40] if d else d)
    return struct.unpack(">Q", d[32:40])[0]


BAD = [b"..", b".", b".x", b".hidden", b"a/b", b"../escape", b"/etc", b"a\0b", b"\0",
       b"..\0", b"a b"]

if MODE == "names":
    CTL, SOCK = sys.argv[3], sys.argv[4]
    sess = hello()
    seq = 0
    for name in BAD:
        seq += 1
        check(answer(xchg(hdr(0x02, pub_body(name, b"m"), sess, seq))) == E["NAME"],
              "PUB to %r -> SL_E_NAME" % name)
        seq += 1
        check(answer(xchg(hdr(0x03, mpub_body(name, [b"a", b"b"]), sess, seq))) == E["NAME"],
              "MPUB to %r -> SL_E_NAME" % name)
        seq += 1
        check(answer(xchg(hdr(0x04, sub_body(name, b"c"), sess, seq))) == E["NAME"],
              "SUB to topic %r -> SL_E_NAME" % name)
        seq += 1
        check(answer(xchg(hdr(0x04, sub_body(b"good", name), sess, seq))) == E["NAME"],
              "SUB to channel %r of good -> SL_E_NAME" % name)
        # FIN on a bad channel: refused before anything is looked up
        seq += 1
        fin = (struct.pack(">HBB", 0, 4, len(name)) + b"good" + name + struct.pack(">H", 1) +
               struct.pack(">Q", 1))
        check(answer(xchg(hdr(0x06, fin, sess, seq))) == E["NAME"],
              "FIN on channel %r -> SL_E_NAME" % name)
    # the control socket: every bad name refused with a clear error
    for name in ["..", ".", ".x", "a/b", "../escape", "a b"]:
        rc, j = ctl(CTL, SOCK, "topic", "create", name)
        err = j.get("error", "")
        check(rc != 0 and "invalid name" in err and "not starting with '.'" in err,
              "sluicectl topic create %r refused with the rule (%s)" % (name, err))
        rc, j = ctl(CTL, SOCK, "channel", "create", "good", name)
        err = j.get("error", "")
        check(rc != 0 and "invalid name" in err,
              "sluicectl channel create good %r refused (%s)" % (name, err))
    for line in [b'topic create "a\0b"\n', b"topic create \0\n", b'topic create "..\0"\n']:
        out = ctl_raw(SOCK, line)
        check('"error"' in out and "created" not in out,
              "control request %r refused (%s)" % (line, out.strip()))
    rc, j = ctl(CTL, SOCK, "topic", "list")
    names = sorted(t["name"] for t in j.get("topics", []))
    check(names == ["good"], "only topic good exists (%s)" % names)
    # the broker still serves: a good publish is acknowledged
    seq += 1
    check(answer(xchg(hdr(0x02, pub_body(b"good", b"after the bad names"), sess, seq))) == 0,
          "PUB to good after the bad names acknowledged")
    done()

if MODE == "one":
    topic, want = sys.argv[3].encode(), int(sys.argv[4])
    sess = hello()
    sock.settimeout(3)
    got = answer(xchg(hdr(0x02, pub_body(topic, b"one"), sess, 1)))
    check(got == want, "one PUB to %s, no retransmission: answer %s, expected %s" %
          (topic, got, want))
    done()

if MODE == "flood":
    CTL, SOCK, N = sys.argv[3], sys.argv[4], int(sys.argv[5])
    sess = hello()
    sock.setblocking(False)
    WINDOW = 32
    RTO = 0.25
    MAX_TRIES = 40
    frames = {}
    for i in range(N):
        seq = i + 1
        frames[seq] = hdr(0x02, pub_body(b"zf-%04d" % i, b"flood %d" % i), sess, seq, cookie=seq)
    final = {}          # seq -> answer code
    tries = {s: 0 for s in frames}
    first_answered = 0  # final answers to a first attempt (no retransmission)
    full_answers = 0
    pending = {}        # seq -> time sent
    todo = sorted(frames)
    deadline = time.time() + 240
    while (todo or pending) and time.time() < deadline:
        now = time.time()
        # (re)send: new ones within the window, retransmissions after RTO
        for s in list(pending):
            if now - pending[s] > RTO * min(tries[s], 8):
                if tries[s] >= MAX_TRIES:
                    del pending[s]
                    continue
                tries[s] += 1
                pending[s] = now
                sock.sendto(frames[s], dst)
        while todo and len(pending) < WINDOW:
            s = todo.pop(0)
            tries[s] += 1
            pending[s] = now
            sock.sendto(frames[s], dst)
        r, _, _ = select.select([sock], [], [], 0.05)
        while r:
            try:
                d, _ = sock.recvfrom(65535)
            except BlockingIOError:
                break
            if len(d) < 32:
                continue
            s = struct.unpack(">Q", d[16:24])[0]
            code = answer(d)
            if s not in pending or code is None:
                continue
            if code == E["FULL"]:
                # too many creations waiting: a busy answer, the publish is sent again
                full_answers += 1
                pending[s] = time.time() - RTO * min(tries[s], 8) + 0.05
                continue
            final[s] = code
            if tries[s] == 1:
                first_answered += 1
            del pending[s]
    oks = sum(1 for c in final.values() if c == 0)
    caps = sum(1 for c in final.values() if c == E["CAPACITY"])
    other = {c: n for c, n in ((c, sum(1 for v in final.values() if v == c))
                               for c in set(final.values())) if c not in (0, E["CAPACITY"])}
    print("flood: %d publishes, %d answered (%d OK, %d SL_E_CAPACITY, other %s), %d on the "
          "first attempt, %d busy answers" % (N, len(final), oks, caps, other, first_answered,
                                              full_answers), flush=True)
    check(len(final) == N, "every publish answered (%d of %d)" % (len(final), N))
    check(not other, "answers are OK or SL_E_CAPACITY only (%s)" % other)
    rc, st = ctl(CTL, SOCK, "status")
    check(st.get("topics", 1 << 30) <= st.get("max_topics", 0),
          "topic limit kept (%s of %s)" % (st.get("topics"), st.get("max_topics")))
    check(st.get("log_budget_bytes", 0) == 0 or
          st.get("log_reserved_bytes", 1 << 62) <= st.get("log_budget_bytes", 0),
          "memory budget kept (%s of %s)" % (st.get("log_reserved_bytes"),
                                            st.get("log_budget_bytes")))
    # print the numbers for the shell script: OKs, topics
    print("RESULT oks=%d caps=%d topics=%s" % (oks, caps, st.get("topics")), flush=True)
    done()

print("unknown mode", MODE)
sys.exit(2)
