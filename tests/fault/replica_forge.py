#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# An attacker on the replica network of a three-node cluster (tests/fault/replica_forge.sh
# runs this inside the test's network namespace). It works on the kernel side of the
# victim follower's tap: everything sent there reaches the follower's DPDK port.
#
#   replica_forge.py capture IFACE LEADER_IP OUT   one genuine replica datagram from the
#                                                  leader to the follower, as a frame (hex)
#   replica_forge.py attack IFACE FRAME BRIDGE_IP  send every forgery below, built on the
#                                                  captured frame's addresses
#
# The forgeries (each one line of output, so the test can count them):
#   replay       the captured frame again, byte for byte
#   flip         the captured frame with one byte of the replication datagram changed
#   v1-epoch     the old, untagged envelope (version 1) carrying a WRITE from the leader's
#                address with a huge write epoch: before replica authentication, this made
#                the follower drop every real WRITE after it
#   v2-old       the same WRITE in the version-2 envelope (BLAKE2b tag, no boot field), with
#                the capture's key id, a fresh sequence and a made-up tag: refused as
#                malformed since version 3
#   v3-badtag    the same WRITE in a version-3 envelope with the capture's key id, a fresh
#                sequence, a random boot and a made-up tag
#   v3-notag     the same with key id 0 and a zero tag (what an insecure node sends)
#   nonmember    the captured datagram sent from an address that is not a member
import os
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
REPL_PORT = 5151


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(dst_mac, src_mac, src_ip, dst_ip, sport, dport, payload):
    udp_len = 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0x1234, 0, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, udp_len)
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0) + payload
    c = csum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    return dst_mac + src_mac + b"\x08\x00" + ip + udp


def parse(fr):
    """(src_ip, dst_ip, sport, dport, payload) of an IPv4/UDP frame, or None."""
    if len(fr) < 42 or fr[12:14] != b"\x08\x00" or fr[23] != 17:
        return None
    ihl = (fr[14] & 15) * 4
    l4 = 14 + ihl
    sport, dport, ulen = struct.unpack("!HHH", fr[l4:l4 + 6])
    return (socket.inet_ntoa(fr[26:30]), socket.inet_ntoa(fr[30:34]), sport, dport,
            fr[l4 + 8:l4 + ulen])


def capture(iface, leader_ip, out):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.settimeout(1.0)
    print("listening", flush=True)
    seen = 0
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            fr = s.recv(65535)
        except socket.timeout:
            continue
        p = parse(fr)
        seen += 1
        # a datagram of the replication protocol with at least one record (a WRITE)
        if p and p[0] == leader_ip and p[3] == REPL_PORT and len(p[4]) > 120:
            with open(out, "w") as f:
                f.write(fr.hex())
            print("captured %d-byte replica datagram from %s" % (len(p[4]), leader_ip))
            return 0
    print("no replica datagram from %s in 30 s (%d frames seen)" % (leader_ip, seen),
          file=sys.stderr)
    return 1


def fnv1a(name):
    h = 0xCBF29CE484222325
    for b in name:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def forged_write(topic=b"r"):
    """A WRITE of leadership (epoch 1, session 1) with write epoch 2^63 and one empty
    record: the replication datagram of docs/replication.md."""
    hdr = b"SLR" + bytes([1, 1, 0, 0, 0]) + struct.pack("<IIQQQ", 0, 1, fnv1a(topic), 1,
                                                          1 << 63)
    body = struct.pack("<QQ", 1 << 40, 0) + bytes(56)
    return hdr + body


def env_v1(frm, to, topic, dgram):
    return struct.pack("!IBBHII", 0x534C5250, 1, len(topic), 0, frm, to) + topic + dgram


def env_v2(frm, to, topic, dgram, key_id, seq, tag):
    return (struct.pack("!IBBHIIBBHQ", 0x534C5250, 2, len(topic), 0, frm, to, 0, key_id, 0,
                        seq) + topic + dgram + tag)


def env_v3(frm, to, topic, dgram, key_id, seq, boot, tag):
    return (struct.pack("!IBBHIIBBHQQ", 0x534C5250, 3, len(topic), 0, frm, to, 0, key_id, 0,
                        seq, boot) + topic + dgram + tag)


def attack(iface, frame_hex, bridge_ip):
    fr = bytes.fromhex(open(frame_hex).read().strip())
    src_ip, dst_ip, sport, dport, payload = parse(fr)
    dst_mac, src_mac = fr[0:6], fr[6:12]
    frm, to = struct.unpack("!II", payload[8:16])
    key_id = payload[17]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    seq = time.time_ns() + 10 ** 12

    def send(name, src, pl):
        s.send(frame(dst_mac, src_mac, src, dst_ip, sport, dport, pl))
        print(name)

    send("replay", src_ip, payload)
    flipped = bytearray(payload)
    flipped[len(payload) - 40] ^= 0x01
    send("flip", src_ip, bytes(flipped))
    dgram = forged_write()
    send("v1-epoch", src_ip, env_v1(frm, to, b"r", dgram))
    boot = int.from_bytes(os.urandom(8), "big")
    send("v2-old", src_ip, env_v2(frm, to, b"r", dgram, key_id, seq, os.urandom(16)))
    send("v3-badtag", src_ip, env_v3(frm, to, b"r", dgram, key_id, seq + 1, boot,
                                     os.urandom(16)))
    send("v3-notag", src_ip, env_v3(frm, to, b"r", dgram, 0, seq + 2, boot, bytes(16)))
    send("nonmember", bridge_ip, payload)
    return 0


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "capture":
        return capture(sys.argv[2], sys.argv[3], sys.argv[4])
    if len(sys.argv) == 5 and sys.argv[1] == "attack":
        return attack(sys.argv[2], sys.argv[3], sys.argv[4])
    print(__doc__ or "usage: see the header", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
