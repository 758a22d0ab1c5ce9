#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# A full partition answers every refused publish (run by full_answer.sh in the test's
# namespace; the partition is already full: a durable channel that never reads).
#   - a PUB refused SL_E_FULL is answered at once, every time (never silence);
#   - with the header flag NORESEND (the client reports the refusal, it does not resend):
#     the refusal opens no order hole (the next seq is answered SL_E_FULL, not
#     SL_E_OUT_OF_ORDER), and is remembered: the same seq again gets the same answer;
#   - without it (a client that resends, docs/protocol.md section 8, rule 10) the next seq
#     is refused SL_E_OUT_OF_ORDER behind the hole, as before.
import os, select, socket, struct, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import slproto  # noqa: E402
from slproto import E, F_NORESEND, OP, check, hdr  # noqa: E402

BROKER, TOPIC = sys.argv[1], sys.argv[2].encode()
PORT = 5150


def pub_body(msg):
    return slproto.pub_body(TOPIC, msg)


def mpub_body(msgs):
    return slproto.mpub_body(TOPIC, msgs)


def err_code(d):
    """The ERR code of answer d; "silence", or "op 0x.." for another answer."""
    if d is None:
        return "silence"
    if len(d) < 34 or d[3] != OP["ERR"]:
        return "op 0x%02x" % d[3]
    return struct.unpack(">H", d[32:34])[0]


s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5.0)


def xchg(frame, seq):
    """One send, the answer with that seq; None when silent for 5 s (no resend: a refused
    publish must be answered the first time)."""
    s.sendto(frame, (BROKER, PORT))
    end = time.time() + 5.0
    while time.time() < end:
        r, _, _ = select.select([s], [], [], end - time.time())
        if not r:
            break
        d = s.recv(65535)
        if struct.unpack(">Q", d[16:24])[0] == seq:
            return d
    return None


d = None
for _ in range(5):
    d = xchg(hdr(OP["HELLO"], struct.pack(">II", 0, 0)), 1)
    if d is not None and d[3] == OP["WELCOME"]:
        break
sess = struct.unpack(">Q", d[32:40])[0]
seq = 0

# 0. fill what MPUBs left with PUBs of the same size as below, until one is refused
for i in range(100000):
    seq += 1
    d = xchg(hdr(OP["PUB"], pub_body(b"f" * 100), sess, seq, F_NORESEND), seq)
    if d is None or d[3] != OP["OK"]:
        break
check(err_code(d) == E["FULL"], "filled after %d more PUBs: SL_E_FULL (%s)" % (i, err_code(d)))

# 1. every refused write is answered, PUB and MPUB, with and without NORESEND
codes = []
for i in range(50):
    seq += 1
    flags = F_NORESEND if i % 2 else 0
    body = pub_body(b"x" * 100) if i % 3 else mpub_body([b"y" * 100] * 10)
    d = xchg(hdr(OP["PUB"] if i % 3 else OP["MPUB"], body, sess, seq, flags), seq)
    codes.append(err_code(d))
check(all(c in (E["FULL"], E["OUT_OF_ORDER"]) for c in codes),
      "50 publishes to the full partition: each answered FULL or OUT_OF_ORDER at once (%s)"
      % sorted(set(map(str, codes))))
check(codes[0] == E["FULL"], "the first is answered SL_E_FULL (%s)" % codes[0])

# 2. NORESEND: no hole, the refusal remembered; a new session so no hole is left from 1.
d = xchg(hdr(OP["HELLO"], struct.pack(">II", 0, 0)), 1)
sess = struct.unpack(">Q", d[32:40])[0]
seq = 1
d = xchg(hdr(OP["PUB"], pub_body(b"a" * 100), sess, seq, F_NORESEND), seq)
check(err_code(d) == E["FULL"], "NORESEND PUB: SL_E_FULL (%s)" % err_code(d))
d = xchg(hdr(OP["PUB"], pub_body(b"a" * 100), sess, seq, F_NORESEND | 0x0002), seq)
check(err_code(d) == E["FULL"], "the same seq again: the same SL_E_FULL (%s)" % err_code(d))
seq = 2
d = xchg(hdr(OP["MPUB"], mpub_body([b"b" * 100] * 4), sess, seq, F_NORESEND), seq)
check(err_code(d) == E["FULL"],
      "the next seq: SL_E_FULL, not OUT_OF_ORDER (no hole) (%s)" % err_code(d))
# a publish that may be resent opens the hole, as rule 10 says
seq = 3
d = xchg(hdr(OP["PUB"], pub_body(b"c" * 100), sess, seq, 0), seq)
check(err_code(d) == E["FULL"], "a resendable PUB: SL_E_FULL (%s)" % err_code(d))
seq = 4
d = xchg(hdr(OP["PUB"], pub_body(b"d" * 100), sess, seq, 0), seq)
check(err_code(d) == E["OUT_OF_ORDER"], "behind it: SL_E_OUT_OF_ORDER (%s)" % err_code(d))

slproto.finish()
