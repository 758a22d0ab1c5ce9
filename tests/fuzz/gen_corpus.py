#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
"""Regenerate the seed corpus of fuzz_packet in tests/fuzz/corpus/.

Written from docs/protocol.md, independently of dataplane/wire.c, so the seeds also
cross-check the C codec. Frames named *.raw are bare UDP payloads; eth_*.bin are the
same frames in Ethernet/IPv4/UDP to 10.0.0.1:5150 (valid IPv4 checksum, UDP checksum
0); garbage_*.bin must be rejected. Usage: gen_corpus.py [OUTDIR]
"""
import os
import struct
import sys

MAGIC = 0x534C
SESSION = 0x2A
COOKIE = 0x1122334455667788


def frame(op, body, flags=0, session=SESSION, seq=1):
    return struct.pack(">HBBHHQQQ", MAGIC, 1, op, flags, len(body), session, seq,
                       COOKIE) + body


def addr(part, topic, chan):
    return struct.pack(">HBB", part, len(topic), len(chan)) + topic + chan


def pub_body(part, topic, msg, trace=None):
    flags = 0x01 if trace is not None else 0
    b = struct.pack(">HBB", part, len(topic), flags) + topic
    if trace is not None:
        b += struct.pack(">Q", trace)
    return b + struct.pack(">I", len(msg)) + msg


def mpub_body(part, topic, msgs):
    b = struct.pack(">HBB", part, len(topic), 0) + topic + struct.pack(">H", len(msgs))
    for m in msgs:
        b += struct.pack(">I", len(m)) + m
    return b


def mpart_body(part, topic, msgs, index, nfrag, off, n, trace=None):
    """MPUB_PART (0x0D): fragment index of nfrag of the MPUB of msgs, bytes off..off+n of
    its element area."""
    area = b"".join(struct.pack(">I", len(m)) + m for m in msgs)
    flags = 0x01 if trace is not None else 0
    b = struct.pack(">HBB", part, len(topic), flags) + topic
    if trace is not None:
        b += struct.pack(">Q", trace)
    return b + struct.pack(">BBHII", index, nfrag, len(msgs), len(area), off) + \
        area[off:off + n]


def ip_cksum(hdr):
    s = sum(struct.unpack(">10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(payload, dport=5150):
    dst_mac = bytes([0x02, 0, 0, 0, 0, 0x01])
    src_mac = bytes([0x02, 0, 0, 0, 0, 0x02])
    udp = struct.pack(">HHHH", 40000, dport, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0x4000, 64, 17, 0,
                     bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1]))
    ip = ip[:10] + struct.pack(">H", ip_cksum(ip)) + ip[12:]
    return dst_mac + src_mac + b"\x08\x00" + ip + udp


def rlink(topic, dgram, key_id=0x5A, seq=1767225600000000000, lane=0,
          boot=0x5EED5EED5EED5EED):
    """A replica link payload, version 3 (dataplane/rlink.h), with a zero tag."""
    return (struct.pack(">IBBHIIBBHQQ", 0x534C5250, 3, len(topic), 0, 1, 2, lane, key_id, 0,
                        seq, boot) + topic + dgram + bytes(16))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    t, c = b"demo", b"workers"
    f = {
        "hello": frame(0x01, struct.pack(">II", 0x00010000, 64), session=0),
        "pub": frame(0x02, pub_body(0, t, b"hello")),
        "pub_trace_noack": frame(0x02, pub_body(0xFFFF, t, b"traced", 0xABCDEF), flags=1),
        "mpub": frame(0x03, mpub_body(1, t, [b"one", b"", b"three"])),
        "sub": frame(0x04, addr(0, t, c) + struct.pack(">BBI", 0x01, 0, 16)),
        "rdy": frame(0x05, addr(0, t, c) + struct.pack(">I", 32)),
        "fin": frame(0x06, addr(0, t, c) + struct.pack(">HQQ", 2, 1, 2)),
        "req": frame(0x07, addr(0, t, c) + struct.pack(">QI", 3, 1000)),
        "touch": frame(0x08, addr(0, t, c) + struct.pack(">Q", 4)),
        "cls": frame(0x09, addr(0, t, c)),
        "cls_session": frame(0x09, addr(0, b"", b"")),
        "nop": frame(0x0A, b""),
        "set_offset": frame(0x0B, addr(0, t, c) + struct.pack(">B7xQ", 1, 100)),
        "ok": frame(0x80, struct.pack(">BBHIQQQ", 0x02, 0, 0, 1, 1, 0, 1)),
        "err": frame(0x81, struct.pack(">HBBHH", 1011, 0x02, 0, 0, 10) + b"not leader"),
        "msg": frame(0x82, struct.pack(">QHHIQQQQ", 7, 0, 1, 5, 1, 0,
                                        1767225600000000000, 0) + b"hello"),
        "welcome": frame(0x83, struct.pack(">QIIII", SESSION, 64, 1400, 1000, 10000)),
        # the MPUB above in two fragments (20-byte element area: 10 + 10 bytes), seq 2
        "mpub_part_0": frame(0x0D, mpart_body(1, t, [b"one", b"", b"three"], 0, 2, 0, 10),
                             seq=2),
        "mpub_part_1": frame(0x0D, mpart_body(1, t, [b"one", b"", b"three"], 1, 2, 10, 10),
                             seq=2),
        "mpub_part_trace": frame(0x0D, mpart_body(0, t, [b"x" * 40] * 3, 2, 3, 88, 44,
                                                  0xABCDEF), seq=3),
        "metadata": frame(0x0C, struct.pack(">HB", 0, len(t)) + t, session=0, seq=0),
        # 3 partitions; entries 1..2: node 2 at 10.0.0.12:5150 leads 1 (epoch 3), this
        # node (3) leads 2 and may write
        "meta": frame(0x84, struct.pack(">HHHH", 3, 1, 2, 0)
                      + struct.pack(">HHI4sHHI", 1, 0x0004, 2, bytes([10, 0, 0, 12]), 5150,
                                    0, 3)
                      + struct.pack(">HHI4sHHI", 2, 0x0007, 3, bytes([10, 0, 0, 13]), 5150,
                                    0, 3), session=0, seq=0),
        # META v2 (header flag 0x0010): asked for by METADATA with that flag; entries carry
        # max_record (1236 on a 1500 MTU with replication, 0 without)
        "metadata_v2": frame(0x0C, struct.pack(">HB", 0, len(t)) + t, flags=0x0010,
                             session=0, seq=0),
        "meta_v2": frame(0x84, struct.pack(">HHHH", 2, 0, 2, 0)
                         + struct.pack(">HHI4sHHI", 0, 0x0003, 1, bytes([10, 0, 0, 11]), 5150,
                                       1236, 2)
                         + struct.pack(">HHI4sHHI", 1, 0x0004, 2, bytes([10, 0, 0, 12]), 5150,
                                       0, 2), flags=0x0010, session=0, seq=0),
    }
    for name, data in f.items():
        with open(os.path.join(out, name + ".raw"), "wb") as fp:
            fp.write(data)
    for name in ("hello", "pub", "mpub", "mpub_part_0", "sub", "fin", "cls", "set_offset", "nop",
                 "metadata"):
        with open(os.path.join(out, "eth_" + name + ".bin"), "wb") as fp:
            fp.write(eth(f[name]))
    # replica link payloads: a WRITE (header of docs/replication.md, one empty record) and
    # a HEARTBEAT, each in a version-2 envelope
    write = (b"SLR" + bytes([1, 1, 0, 0, 0]) + struct.pack("<IIQQQ", 0, 1, 0, 1, 1 << 32)
             + struct.pack("<QQ", 0, 0) + bytes(56))
    beat = (b"SLR" + bytes([1, 3, 0, 0, 0]) + struct.pack("<IIQQQ", 0, 1, 0, 1, 1 << 32)
            + struct.pack("<QQ", 0, 0))
    for name, data in (("rlink_write", rlink(b"r", write)),
                       ("rlink_heartbeat", rlink(b"orders", beat, lane=3))):
        with open(os.path.join(out, name + ".raw"), "wb") as fp:
            fp.write(data)
    garbage = {
        "garbage_bad_magic": b"\x4c\x53" + f["pub"][2:],
        "garbage_truncated_pub": f["pub"][:-1],
        "garbage_mpub_overrun": f["mpub"][:-9] + b"\x00\x00\x00\x06three",
        "garbage_eth_wrong_port": eth(f["pub"], dport=9),
        # a fragment reaching past its MPUB's element area (off 10 + 10 > 19)
        "garbage_mpub_part_past": frame(0x0D, struct.pack(">HBB", 1, len(t), 0) + t
                                        + struct.pack(">BBHII", 1, 2, 3, 19, 10) + b"x" * 10,
                                        seq=2),
    }
    for name, data in garbage.items():
        with open(os.path.join(out, name + ".bin"), "wb") as fp:
            fp.write(data)


if __name__ == "__main__":
    main()
