# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# sluice's client protocol for the raw-socket tests (docs/protocol.md): frame building,
# answer fields, the error and opcode tables, a session that publishes with retries, the
# sluicectl JSON helper and the tests' ok/FAIL counting. Used by tests/integration and
# tests/fault scripts (the fault ones add tests/integration to sys.path).
import json, select, socket, struct, subprocess, sys, time

MAGIC = 0x534C
PORT = 5150  # sluiced's client UDP port
OP = dict(HELLO=1, PUB=2, MPUB=3, SUB=4, RDY=5, FIN=6, REQ=7, TOUCH=8, CLS=9, NOP=10,
          SET_OFFSET=11, OK=0x80, ERR=0x81, MSG=0x82, WELCOME=0x83)
E = dict(MALFORMED=1001, SESSION=1004, TOPIC=1005, CHANNEL=1007, FULL=1008, SEQ_OLD=1010,
         WRITE_DISABLED=1012, QUORUM=1013, LIMIT=1017, INVAL=1022, AUTH=1025, DENIED=1026,
         OUT_OF_ORDER=1027)
# header flags
F_NOACK, F_RETRY, F_PRODUCER, F_NORESEND = 0x0001, 0x0002, 0x0004, 0x0008
F_BUNDLE = 0x0020


def frames(d):
    """The frames of a datagram: a bundle's (protocol.md section 1), or the datagram."""
    out, pos = [], 0
    if d is None or len(d) < 32 or not struct.unpack(">H", d[4:6])[0] & F_BUNDLE:
        return [d]
    while pos + 32 <= len(d):
        n = 32 + struct.unpack(">H", d[pos + 6:pos + 8])[0]
        out.append(d[pos:pos + n])
        pos += n
    return out
# answers a client retries with the same seq (docs/protocol.md section 8)
BUSY = (E["FULL"], E["WRITE_DISABLED"], E["QUORUM"], E["OUT_OF_ORDER"])

passed = failed = 0


def check(cond, what):
    """Count and print one check: "ok  what" or "FAIL: what"."""
    global passed, failed
    if cond:
        passed += 1
        print("ok  ", what, flush=True)
    else:
        failed += 1
        print("FAIL:", what, flush=True)


def finish():
    """Print the counts and exit 1 if any check failed."""
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


def hdr(op, body, sess=0, seq=1, flags=0, cookie=0xC00C1E):
    return struct.pack(">HBBHHQQQ", MAGIC, 1, op, flags, len(body), sess, seq, cookie) + body


def hello(producer=0, cookie=0xC00C1E):
    """A HELLO frame; with a producer id (section 8.11): header flag F_PRODUCER, the id
    after the body."""
    if not producer:
        return hdr(OP["HELLO"], struct.pack(">II", 0, 0), cookie=cookie)
    return hdr(OP["HELLO"], struct.pack(">IIQ", 0, 0, producer), flags=F_PRODUCER,
               cookie=cookie)


def addr(topic, chan, part=0):
    return struct.pack(">HBB", part, len(topic), len(chan)) + topic + chan


def pub_body(topic, msg, part=0):
    return addr(topic, b"", part) + struct.pack(">I", len(msg)) + msg


def mpub_body(topic, msgs, part=0):
    return addr(topic, b"", part) + struct.pack(">H", len(msgs)) + \
        b"".join(struct.pack(">I", len(m)) + m for m in msgs)


def sub_body(topic, chan, flags=0, rdy=16):
    return addr(topic, chan) + struct.pack(">BBI", flags, 0, rdy)


def setoff_body(topic, chan, kind=3, value=0):
    return addr(topic, chan) + struct.pack(">B7xQ", kind, value)


def answer_seq(d):
    """The seq an answer carries, or None for a runt."""
    return struct.unpack(">Q", d[16:24])[0] if d is not None and len(d) >= 24 else None


def err_code(d):
    """The SL_E_* code of an ERR answer, None for anything else."""
    if d is None or len(d) < 34 or d[3] != OP["ERR"]:
        return None
    return struct.unpack(">H", d[32:34])[0]


def err_text(d):
    if d is None or len(d) < 40 or d[3] != OP["ERR"]:
        return ""
    n = struct.unpack(">H", d[38:40])[0]
    return d[40:40 + n].decode(errors="replace")


def ok_fields(d):
    """(count, id, offset, aux) of an OK, or None."""
    if d is None or len(d) < 64 or d[3] != OP["OK"]:
        return None
    return struct.unpack(">IQQQ", d[36:64])


class Session:
    """A client session over UDP: HELLO (with a producer id unless 0) answered WELCOME,
    else SystemExit; xchg resends a frame until an answer with its seq comes; publish
    retries busy answers (BUSY) with the same seq."""

    def __init__(self, addr, producer=0, total=30.0, port=PORT):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.dst = (addr, port)
        d = self.xchg(hello(producer, cookie=0xABC), 1, total)
        if d is None or d[3] != OP["WELCOME"]:
            raise SystemExit("FAIL: HELLO with producer id %x: %s" %
                             (producer, "no answer" if d is None else
                              "ERR %s" % err_code(d)))
        self.sess = struct.unpack(">Q", d[32:40])[0]

    def xchg(self, frame, seq, total=30.0):
        """The first answer carrying seq, the frame sent every 0.3 s; None after total s."""
        end = time.time() + total
        while time.time() < end:
            self.s.sendto(frame, self.dst)
            t = time.time() + 0.3
            while time.time() < t:
                r, _, _ = select.select([self.s], [], [], t - time.time())
                if not r:
                    break
                d = self.s.recv(65535)
                if answer_seq(d) == seq and len(d) >= 32:
                    return d
        return None

    def publish(self, op, body, seq, total=30.0):
        """The final answer to a PUB or MPUB: busy answers are retried with the same seq."""
        end = time.time() + total
        while True:
            d = self.xchg(hdr(op, body, self.sess, seq), seq, max(end - time.time(), 1))
            if err_code(d) in BUSY and time.time() < end:
                time.sleep(0.05)
                continue
            return d


def ctl_run(ctl, sock, *args):
    return subprocess.run([ctl, "-s", sock, "--json"] + list(args), capture_output=True,
                          text=True, timeout=30)


def ctl_json(ctl, sock, *args):
    """sluicectl's JSON answer to one command."""
    return json.loads(ctl_run(ctl, sock, *args).stdout)


def sub_pairs(path):
    """The (id, body) pairs of a file of `sluice-sub -i` lines ("ID BODY"), in order."""
    out = []
    for line in open(path).read().split("\n"):
        if line:
            i, body = line.split(" ", 1)
            out.append((int(i), body))
    return out
