#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# The raw-protocol side of producer_kill.sh (docs/protocol.md section 8 rule 11, the
# idempotent producer across a crash): a client with a producer id (HELLO header flag
# 0x0004, the id after the body) publishes to topic TOPIC, partition 0:
#   before OUT N: N publishes, seq 1..N, every third an MPUB of 3, the others PUBs; their
#       answers (count, id, offset) go to OUT (JSON);
#   after IN: (sluiced was SIGKILLed and restarted on its data directory) in a new session
#       with the same producer id, the (producer, seq) of IN again, as a client whose OKs
#       were lost sends them: each of the last SEQS (what the producer table remembers
#       per producer, dataplane/ptab.h SL_PTAB_SEQS) must get its original answer, an
#       older one SEQ_OLD (its outcome cannot be told: nothing written); then seq N+1
#       (new) must be written right after them.
import json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
import slproto  # noqa: E402
from slproto import OP, Session, check, err_code, ok_fields  # noqa: E402

PRODUCER = 0x5EED1DE3A0000007
SEQS = 128


def publish(s, topic, seq):
    """seq's publish in session s (an MPUB of 3 for every third seq), its final answer"""
    if seq % 3 == 0:
        return s.publish(OP["MPUB"], slproto.mpub_body(
            topic, [b"seq %d part %d" % (seq, k) for k in range(3)]), seq)
    return s.publish(OP["PUB"], slproto.pub_body(topic, b"seq %d" % seq), seq)


def before(addr, topic, out, n):
    s = Session(addr, PRODUCER)
    ans = {}
    for seq in range(1, n + 1):
        d = publish(s, topic, seq)
        if ok_fields(d) is None:
            check(False, "%s seq %d: no OK (%s)" % (topic.decode(), seq, err_code(d)))
            break
        ans[seq] = ok_fields(d)[:3]
    check(len(ans) == n, "%s: %d publishes acknowledged" % (topic.decode(), len(ans)))
    json.dump({str(k): v for k, v in ans.items()}, open(out, "w"))


def after(addr, topic, inp):
    ans = {int(k): tuple(v) for k, v in json.load(open(inp)).items()}
    s = Session(addr, PRODUCER)
    bad = []
    last = max(ans)
    held = [q for q in sorted(ans) if q > last - SEQS]
    for seq in held:
        got = ok_fields(publish(s, topic, seq))
        if got is None or got[:3] != ans[seq]:
            bad.append((seq, ans[seq], got))
    check(not bad, "%s: all %d retries (seqs %d..%d) after the restart got their original "
          "answers%s" % (topic.decode(), len(held), held[0], last, "" if not bad else
                         " -- %d did not, first %s" % (len(bad), bad[:3])))
    if held[0] > 1:
        code = err_code(publish(s, topic, 1))
        check(code == slproto.E["SEQ_OLD"], "%s: seq 1, older than what the table "
              "remembers: SEQ_OLD, nothing written (%s)" % (topic.decode(), code))
    cnt, first, _ = ans[last]
    d = ok_fields(publish(s, topic, last + 1))
    check(d is not None and d[1] == first + cnt,
          "%s: seq %d (new) is written right after them, id %d (%s)" %
          (topic.decode(), last + 1, first + cnt, d))


if __name__ == "__main__":
    if sys.argv[1] == "before":
        before(sys.argv[2], sys.argv[3].encode(), sys.argv[4], int(sys.argv[5]))
    else:
        after(sys.argv[2], sys.argv[3].encode(), sys.argv[4])
    slproto.finish()
