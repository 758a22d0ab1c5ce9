#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# NSQ producer and consumer over raw TCP protocol V2, for nsq_cluster.sh.
#   nsq_failover.py produce HOST:PORT TOPIC N ACKED_FILE
#       PUBs "m000001".."mN" pipelined (8 in flight); each OK appends the message's
#       number to ACKED_FILE. A failed PUB (E_PUB_FAILED closes the connection, as nsqd's
#       fatal errors do) or a lost connection: reconnect and publish what was not
#       acknowledged again. Exits 0 once all N are acknowledged, 1 after 300 s.
#   nsq_failover.py consume HOST:PORT TOPIC CHANNEL OUT_FILE
#       SUB, RDY 64, FIN every message, append its body to OUT_FILE; until killed
#       (reconnects when the connection is lost).
import socket
import struct
import sys
import time

WINDOW = 8
DEADLINE = time.monotonic() + 300


class Conn:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        self.s.sendall(b"  V2")
        self.buf = b""

    def frame(self):
        while True:
            while len(self.buf) < 4 or len(self.buf) < 4 + struct.unpack(">I", self.buf[:4])[0]:
                d = self.s.recv(65536)
                if not d:
                    raise ConnectionError("closed")
                self.buf += d
            size = struct.unpack(">I", self.buf[:4])[0]
            ftype = struct.unpack(">I", self.buf[4:8])[0]
            data = self.buf[8:4 + size]
            self.buf = self.buf[4 + size:]
            if ftype == 0 and data == b"_heartbeat_":
                self.s.sendall(b"NOP\n")
                continue
            return ftype, data


def produce(addr, topic, n, acked_file):
    out = open(acked_file, "a")
    nxt, done = 1, set()
    while len(done) < n and time.monotonic() < DEADLINE:
        try:
            c = Conn(addr)
            inflight = []
            while len(done) < n:
                while len(inflight) < WINDOW:
                    while nxt <= n and nxt in done:
                        nxt += 1
                    if nxt > n:
                        break
                    body = b"m%06d" % nxt
                    c.s.sendall(b"PUB %s\n" % topic.encode() + struct.pack(">I", len(body)) +
                                body)
                    inflight.append(nxt)
                    nxt += 1
                if not inflight:
                    nxt = 1
                    continue
                ftype, data = c.frame()
                i = inflight.pop(0)
                if ftype == 0 and data == b"OK":
                    done.add(i)
                    out.write("%d\n" % i)
                    out.flush()
                else:
                    sys.stderr.write("produce: %d answered %r\n" % (i, data))
                    raise ConnectionError("failed")
        except (OSError, ConnectionError) as e:
            sys.stderr.write("produce: %s, %d acknowledged; reconnecting\n" % (e, len(done)))
            nxt = 1
            time.sleep(0.2)
    return 0 if len(done) == n else 1


def consume(addr, topic, channel, out_file):
    out = open(out_file, "a")
    while True:
        try:
            c = Conn(addr)
            c.s.sendall(b"SUB %s %s\n" % (topic.encode(), channel.encode()))
            ftype, data = c.frame()
            if ftype != 0:
                raise ConnectionError("SUB: %r" % data)
            c.s.sendall(b"RDY 64\n")
            while True:
                ftype, data = c.frame()
                if ftype != 2:
                    continue
                mid, body = data[10:26], data[26:]
                out.write(body.decode() + "\n")
                out.flush()
                c.s.sendall(b"FIN " + mid + b"\n")
        except (OSError, ConnectionError) as e:
            sys.stderr.write("consume: %s; reconnecting\n" % e)
            time.sleep(0.2)


if sys.argv[1] == "produce":
    sys.exit(produce(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]))
consume(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
