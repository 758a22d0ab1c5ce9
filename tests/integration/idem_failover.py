#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The raw-protocol side of idem_failover.sh (docs/protocol.md section 8.11, idempotent
# producer): HELLO with a producer id (header flag 0x0004, the id after the body), then
#   before ADDR OUT: PUB seq 1, MPUB seq 2 (2 messages) to the leader; the same (producer,
#       seq) again in a new session on the same node: the same answers, nothing written;
#       the answers go to OUT (JSON);
#   after ADDR IN: at the new leader, in a new session with the same producer id, PUB
#       seq 1 and MPUB seq 2 again (what a client whose OKs were lost sends): answered with
#       the original ids, nothing written; then PUB seq 3 (new), its retry in yet another
#       session; a session without a producer id (an old client) still publishes.
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slproto  # noqa: E402
from slproto import OP, Session, check, err_code, err_text, ok_fields  # noqa: E402

PRODUCER = 0x5EED1DE3A0000001
TOPIC = b"r"


def answer(d):
    if d is None:
        return "no answer"
    if d[3] == OP["ERR"]:
        return "ERR %d %s" % (err_code(d), err_text(d))
    return "OK count %d id %d offset %d aux %d" % ok_fields(d)


def before(addr, out):
    s = Session(addr, PRODUCER, 10)
    d1 = s.publish(OP["PUB"], slproto.pub_body(TOPIC, b"once-1"), 1)
    check(d1 is not None and d1[3] == OP["OK"], "PUB seq 1 at the leader: %s" % answer(d1))
    d2 = s.publish(OP["MPUB"], slproto.mpub_body(TOPIC, [b"once-2a", b"once-2b"]), 2)
    check(d2 is not None and d2[3] == OP["OK"] and ok_fields(d2)[0] == 2,
          "MPUB seq 2 (2 messages): %s" % answer(d2))
    if slproto.failed:
        sys.exit(1)
    # the same producer in a new session on the same node: recognised
    t = Session(addr, PRODUCER, 10)
    r1 = t.publish(OP["PUB"], slproto.pub_body(TOPIC, b"once-1"), 1)
    check(r1 is not None and r1[3] == OP["OK"] and ok_fields(r1)[1] == ok_fields(d1)[1],
          "seq 1 again in a new session, same node: the original id (%s)" % answer(r1))
    json.dump({"id1": ok_fields(d1)[1], "off1": ok_fields(d1)[2], "id2": ok_fields(d2)[1],
               "off2": ok_fields(d2)[2]}, open(out, "w"))


def after(addr, inp):
    o = json.load(open(inp))
    s = Session(addr, PRODUCER, 10)
    r1 = s.publish(OP["PUB"], slproto.pub_body(TOPIC, b"once-1"), 1)
    check(r1 is not None and r1[3] == OP["OK"] and ok_fields(r1)[:3] == (1, o["id1"], o["off1"]),
          "new leader, new session: PUB seq 1 retried gets the original answer, id %d "
          "offset %d (%s)" % (o["id1"], o["off1"], answer(r1)))
    r2 = s.publish(OP["MPUB"], slproto.mpub_body(TOPIC, [b"once-2a", b"once-2b"]), 2)
    check(r2 is not None and r2[3] == OP["OK"] and ok_fields(r2)[:3] == (2, o["id2"], o["off2"]),
          "MPUB seq 2 retried: the original first id %d, count 2 (%s)" % (o["id2"], answer(r2)))
    r3 = s.publish(OP["PUB"], slproto.pub_body(TOPIC, b"once-3"), 3)
    check(r3 is not None and r3[3] == OP["OK"] and ok_fields(r3)[1] == o["id2"] + 2,
          "PUB seq 3 (new) is written after them, id %d (%s)" % (o["id2"] + 2, answer(r3)))
    t = Session(addr, PRODUCER, 10)
    r4 = t.publish(OP["PUB"], slproto.pub_body(TOPIC, b"once-3"), 3)
    check(r4 is not None and r4[3] == OP["OK"] and r3 is not None and
          ok_fields(r4)[1] == ok_fields(r3)[1], "seq 3 retried in another session: same id "
          "(%s)" % answer(r4))
    u = Session(addr, 0, 10)
    r5 = u.publish(OP["PUB"], slproto.pub_body(TOPIC, b"plain"), 1)
    check(r5 is not None and r5[3] == OP["OK"] and ok_fields(r5)[1] == o["id2"] + 3,
          "a session without a producer id (an old client) publishes as before (%s)" %
          answer(r5))


if __name__ == "__main__":
    {"before": before, "after": after}[sys.argv[1]](sys.argv[2], sys.argv[3])
    slproto.finish()
