#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Raw-socket checks of sluice-nsqd: each NSQ TCP protocol V2 command and error case, as
# nsqd answers them (frame types, error strings, fatal errors closing the connection),
# and the nsqd / nsqlookupd HTTP APIs.
#   nsq_proto.py TCP_HOST:PORT HTTP_HOST:PORT LOOKUPD_HOST:PORT
import json
import socket
import struct
import sys
import time
import urllib.error
import urllib.request

TCP, HTTP, LOOKUPD = sys.argv[1], sys.argv[2], sys.argv[3]
METRICS_OUT = sys.argv[4] if len(sys.argv) > 4 else None  # /metrics saved for promtool
WAIT = 10.0  # upper bound of any wait for an event; never reached when all is well
FRAME_RESPONSE, FRAME_ERROR, FRAME_MESSAGE = 0, 1, 2
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


class Conn:
    def __init__(self, magic=True):
        host, port = TCP.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=WAIT)
        self.buf = b""
        if magic:
            self.s.sendall(b"  V2")

    def send(self, data):
        self.s.sendall(data)

    def cmd(self, line, body=None):
        data = line.encode() + b"\n"
        if body is not None:
            data += struct.pack(">I", len(body)) + body
        self.s.sendall(data)

    def _need(self, n):
        while len(self.buf) < n:
            try:
                chunk = self.s.recv(65536)
            except ConnectionResetError:
                return False
            if not chunk:
                return False
            self.buf += chunk
        return True

    def frame(self, skip_heartbeats=True):
        """(type, data), or None when the gateway closed the connection."""
        while True:
            if not self._need(4):
                return None
            size = struct.unpack(">I", self.buf[:4])[0]
            if not self._need(4 + size):
                return None
            ftype = struct.unpack(">I", self.buf[4:8])[0]
            data = self.buf[8:4 + size]
            self.buf = self.buf[4 + size:]
            if skip_heartbeats and ftype == FRAME_RESPONSE and data == b"_heartbeat_":
                continue
            return ftype, data

    def closed(self):
        """True once the gateway closed (EOF), after any frames still in flight."""
        while True:
            f = self.frame()
            if f is None:
                return True

    def expect(self, ftype, data, what):
        f = self.frame()
        check(f is not None, "%s: connection closed, expected %r" % (what, data))
        check(f == (ftype, data), "%s: got %r, expected %r" % (what, f, (ftype, data)))

    def expect_fatal(self, text, what):
        self.expect(FRAME_ERROR, text.encode(), what)
        check(self.closed(), what + ": connection not closed after a fatal error")

    def message(self):
        f = self.frame()
        check(f is not None and f[0] == FRAME_MESSAGE, "expected a message, got %r" % (f,))
        d = f[1]
        ts, attempts = struct.unpack(">qH", d[:10])
        return {"ts": ts, "attempts": attempts, "id": d[10:26].decode(), "body": d[26:]}

    def identify(self, **kw):
        self.cmd("IDENTIFY", json.dumps(kw).encode())
        return self.frame()

    def close(self):
        self.s.close()


def mpub_body(msgs):
    return struct.pack(">I", len(msgs)) + b"".join(struct.pack(">I", len(m)) + m for m in msgs)


def http(addr, method, path, body=None):
    req = urllib.request.Request("http://%s%s" % (addr, path), data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


# ---- connection setup ----
c = Conn(magic=False)
c.send(b"  V1")
c.expect_fatal("E_BAD_PROTOCOL", "bad magic")

c = Conn()
f = c.identify(client_id="t1", hostname="h", user_agent="nsq_proto/1", feature_negotiation=True,
               tls_v1=True, snappy=True, deflate=True, heartbeat_interval=1000,
               msg_timeout=5000, output_buffer_size=4096, output_buffer_timeout=100)
check(f is not None and f[0] == FRAME_RESPONSE, "IDENTIFY answer %r" % (f,))
ident = json.loads(f[1])
check(ident["tls_v1"] is False and ident["snappy"] is False and ident["deflate"] is False,
      "unsupported features declined: %r" % ident)
check(ident["auth_required"] is False and ident["max_rdy_count"] == 2500, repr(ident))
check(ident["msg_timeout"] == 5000 and ident["output_buffer_size"] == 4096, repr(ident))
# heartbeats: one arrives within the interval; without an answer the gateway hangs up
# after two intervals (nsqd's read deadline)
f = c.frame(skip_heartbeats=False)
check(f == (FRAME_RESPONSE, b"_heartbeat_"), "heartbeat frame, got %r" % (f,))
t0 = time.monotonic()
check(c.closed(), "closed after missed heartbeats")
check(time.monotonic() - t0 < 3.0, "closed within two heartbeat intervals")

c = Conn()
check(c.identify(heartbeat_interval=30000) == (FRAME_RESPONSE, b"OK"),
      "IDENTIFY without feature negotiation answers OK")
c.cmd("IDENTIFY", b"{not json")
c.expect_fatal("E_BAD_BODY IDENTIFY failed to decode JSON body", "IDENTIFY bad JSON")

c = Conn()
c.cmd("IDENTIFY", json.dumps({"heartbeat_interval": 500}).encode())
c.expect_fatal("E_BAD_BODY IDENTIFY heartbeat interval (500) is invalid", "heartbeat range")
c = Conn()
c.cmd("IDENTIFY", json.dumps({"sample_rate": 100}).encode())
c.expect_fatal("E_BAD_BODY IDENTIFY sample rate (100) is invalid", "sample rate range")
for kw, err in [
        ({"output_buffer_size": 10}, "E_BAD_BODY IDENTIFY output buffer size (10) is invalid"),
        ({"output_buffer_timeout": 5},
         "E_BAD_BODY IDENTIFY output buffer timeout (5) is invalid"),
        ({"msg_timeout": 10}, "E_BAD_BODY IDENTIFY msg timeout (10) is invalid"),
        ({"heartbeat_interval": "x"}, "E_BAD_BODY IDENTIFY failed to decode JSON body"),
        ({"tls_v1": "yes"}, "E_BAD_BODY IDENTIFY failed to decode JSON body")]:
    c = Conn()
    c.cmd("IDENTIFY", json.dumps(kw).encode())
    c.expect_fatal(err, "IDENTIFY %r" % kw)
# each feature the gateway lacks, asked alone, is declined as an nsqd without it declines
# it (false in the answer) and the connection goes on in plain text: a PUB works after it
for feature in ({"tls_v1": True}, {"snappy": True}, {"deflate": True, "deflate_level": 9}):
    c = Conn()
    f = c.identify(feature_negotiation=True, **feature)
    check(f is not None and f[0] == FRAME_RESPONSE, "IDENTIFY %r: %r" % (feature, f))
    ans = json.loads(f[1])
    for k in feature:
        if k != "deflate_level":
            check(ans[k] is False, "%s declined: %r" % (k, ans))
    c.cmd("PUB nsq_t0", b"plain")
    c.expect(FRAME_RESPONSE, b"OK", "PUB in plain text after IDENTIFY %r" % feature)
c = Conn()
f = c.identify(feature_negotiation=True, sample_rate=20)
check(json.loads(f[1])["sample_rate"] == 20, "sample_rate 20 accepted: %r" % (f,))
c = Conn()
c.cmd("IDENTIFY", b"")
c.expect_fatal("E_BAD_BODY IDENTIFY invalid body size 0", "IDENTIFY size 0")
c = Conn()
c.send(b"IDENTIFY\n" + struct.pack(">I", 6 * 1024 * 1024))
c.expect_fatal("E_BAD_BODY IDENTIFY body too big 6291456 > 5242880", "IDENTIFY too big")
c = Conn()
c.cmd("AUTH", b"secret")
c.expect_fatal("E_AUTH_DISABLED AUTH disabled", "AUTH")
c = Conn()
c.cmd("AUTH a b", b"secret")
c.expect_fatal("E_INVALID AUTH invalid number of parameters", "AUTH parameters")
c = Conn()
c.cmd("FOO bar")
c.expect_fatal("E_INVALID invalid command FOO", "unknown command")
for line, err in [("REQ 0000000000000001 0", "E_INVALID cannot REQ in current state"),
                  ("TOUCH 0000000000000001", "E_INVALID cannot TOUCH in current state")]:
    c = Conn()
    c.cmd(line)
    c.expect_fatal(err, line + " before SUB")
c = Conn()
c.send(b"MPUB nsq_t1\n" + struct.pack(">I", 6 * 1024 * 1024))
c.expect_fatal("E_BAD_BODY MPUB body too big 6291456 > 5242880", "MPUB too big")
c = Conn()
c.send(b"PUB nsq_t1\n" + struct.pack(">I", 0x80000000))
c.expect_fatal("E_BAD_MESSAGE PUB invalid message body size -2147483648", "PUB size < 0")
c = Conn()
c.send(b"X" * 20000)
check(c.closed(), "a command line over 16 KiB closes the connection")

# ---- publishing ----
p = Conn()
p.cmd("NOP")
p.cmd("PUB nsq_t1", b"one")
p.expect(FRAME_RESPONSE, b"OK", "PUB after NOP (NOP has no answer)")
p.cmd("MPUB nsq_t1", mpub_body([b"two", b"three", b"four"]))
p.expect(FRAME_RESPONSE, b"OK", "MPUB")
# pipelined, in one write (so read in one turn of the gateway's loop, and batched into
# sluice MPUBs): answers in command order
p.send(b"".join(b"PUB nsq_t1\n" + struct.pack(">I", len(b"pipelined %d" % i)) +
                b"pipelined %d" % i for i in range(50)))
for i in range(50):
    p.expect(FRAME_RESPONSE, b"OK", "pipelined PUB %d" % i)
p.cmd("DPUB nsq_t1 0", b"five")
p.expect(FRAME_RESPONSE, b"OK", "DPUB 0")
p.send(b"PUB nsq_big\n" + struct.pack(">I", 100000))  # the size alone: refused at once
f = p.frame()
check(f is not None and f[0] == FRAME_ERROR and
      f[1].startswith(b"E_BAD_MESSAGE PUB message too big 100000 > "), "PUB too big: %r" % (f,))
check(p.closed(), "PUB too big is fatal")

for line, body, err in [
        ("PUB bad!topic", b"x", 'E_BAD_TOPIC PUB topic name "bad!topic" is not valid'),
        ("PUB .hidden", b"x",
         'E_BAD_TOPIC PUB topic name ".hidden" is not valid in sluice (no leading \'.\')'),
        ("PUB", None, "E_INVALID PUB insufficient number of parameters"),
        ("PUB nsq_t1", b"", "E_BAD_MESSAGE PUB invalid message body size 0"),
        ("MPUB bad!topic", mpub_body([b"x"]),
         'E_BAD_TOPIC E_BAD_TOPIC MPUB topic name "bad!topic" is not valid'),
        ("MPUB nsq_t1", struct.pack(">I", 0), "E_BAD_BODY MPUB invalid message count 0"),
        ("MPUB nsq_t1", b"", "E_BAD_BODY MPUB invalid body size 0"),
        ("MPUB nsq_t1", struct.pack(">II", 1, 0), "E_BAD_MESSAGE MPUB invalid message(0) body size 0"),
        ("MPUB nsq_t1", struct.pack(">II", 2, 1) + b"x",
         "E_BAD_MESSAGE MPUB failed to read message(1) body size"),
        ("MPUB nsq_t1", mpub_body([b"x"]) + b"junk", "E_BAD_BODY MPUB invalid body size 13"),
        ("DPUB nsq_t1 1000", b"x",
         "E_DPUB_FAILED DPUB failed deferred publish is not supported by sluice "
         "(use DPUB 0, or REQ with a delay)"),
        ("DPUB nsq_t1 abc", b"x", "E_INVALID DPUB could not parse timeout abc"),
        ("DPUB nsq_t1 99999999", b"x", "E_INVALID DPUB timeout 99999999 out of range 0-3600000"),
]:
    c = Conn()
    c.cmd(line, body)
    c.expect_fatal(err, line)

# ---- consuming ----
c = Conn()
c.cmd("RDY 1")
c.expect_fatal("E_INVALID cannot RDY in current state", "RDY before SUB")
c = Conn()
c.cmd("FIN 0000000000000001")
c.expect_fatal("E_INVALID cannot FIN in current state", "FIN before SUB")
c = Conn()
c.cmd("CLS")
c.expect_fatal("E_INVALID cannot CLS in current state", "CLS before SUB")
c = Conn()
c.cmd("SUB nsq_t1 bad!chan")
c.expect_fatal('E_BAD_CHANNEL SUB channel name "bad!chan" is not valid', "SUB bad channel")
c = Conn()
c.cmd("SUB nsq_t1")
c.expect_fatal("E_INVALID SUB insufficient number of parameters", "SUB params")
c = Conn()
check(c.identify(heartbeat_interval=-1) == (FRAME_RESPONSE, b"OK"), "heartbeats off")
c.cmd("SUB nsq_t1 ch")
c.expect_fatal("E_INVALID cannot SUB with heartbeats disabled", "SUB without heartbeats")

total = 55  # one + three + 50 pipelined + five
c = Conn()
c.cmd("SUB nsq_t1 ch1")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("SUB nsq_t1 ch1")
c.expect_fatal("E_INVALID cannot SUB in current state", "second SUB")

c = Conn()
c.cmd("SUB nsq_t1 ch1")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("RDY 3000")
c.expect_fatal("E_INVALID RDY count 3000 out of range 0-2500", "RDY range")

c = Conn()
check(c.identify(msg_timeout=60000) == (FRAME_RESPONSE, b"OK"), "IDENTIFY consumer")
c.cmd("SUB nsq_t1 ch1")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("RDY 5")
got = [c.message() for _ in range(5)]
check(all(m["attempts"] == 1 and len(m["id"]) == 16 for m in got), repr(got))
check(len({m["id"] for m in got}) == 5, "distinct ids")
# credit: nothing beyond RDY while none is finished
c.s.settimeout(0.3)
try:
    extra = c.frame()
except socket.timeout:
    extra = None
c.s.settimeout(WAIT)
check(extra is None, "no message beyond RDY 5: %r" % (extra,))
bodies = [m["body"] for m in got]
# FIN one: exactly one more comes
c.cmd("FIN " + got[0]["id"])
got.append(c.message())
bodies.append(got[-1]["body"])
c.cmd("FIN " + got[0]["id"])
c.expect(FRAME_ERROR, ("E_FIN_FAILED FIN %s failed ID not in flight" % got[0]["id"]).encode(),
         "FIN twice (not fatal)")
c.cmd("TOUCH " + got[1]["id"])
c.cmd("TOUCH ffff000000000001")
c.expect(FRAME_ERROR, b"E_TOUCH_FAILED TOUCH ffff000000000001 failed ID not in flight",
         "TOUCH unknown")
c.cmd("REQ ffff000000000001 0")
c.expect(FRAME_ERROR, b"E_REQ_FAILED REQ ffff000000000001 failed ID not in flight", "REQ unknown")
# REQ: the same message comes back with attempts 2 (the others are finished as they
# come, as a consumer does, so that credit frees on every partition)
c.cmd("REQ %s 0" % got[1]["id"])
for m in got[2:]:
    c.cmd("FIN " + m["id"])
again = None
while again is None:
    m = c.message()
    if m["id"] == got[1]["id"]:
        again = m
    else:
        bodies.append(m["body"])
        c.cmd("FIN " + m["id"])
check(again["attempts"] == 2 and again["body"] == got[1]["body"], "REQ redelivery %r" % again)
c.cmd("FIN " + again["id"])
c.cmd("RDY 100")
delivered = set(bodies) | {again["body"]}
while len(delivered) < total:
    try:
        m = c.message()
    except socket.timeout:
        print("missing", sorted(set([b"one", b"two", b"three", b"four", b"five"] +
              [b"pipelined %d" % i for i in range(50)]) - delivered))
        raise
    delivered.add(m["body"])
    c.cmd("FIN " + m["id"])
check(b"one" in delivered and b"four" in delivered and b"five" in delivered
      and b"pipelined 49" in delivered, "all published messages delivered")
c.cmd("FIN 123")
c.expect_fatal("E_INVALID invalid message ID", "FIN bad id")

c = Conn()
c.cmd("SUB nsq_t1 ch1")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("REQ 0000000000000001 abc")
c.expect_fatal("E_INVALID REQ could not parse timeout abc", "REQ bad timeout")

c = Conn()
c.cmd("SUB nsq_t1 ch1")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("CLS")
c.expect(FRAME_RESPONSE, b"CLOSE_WAIT", "CLS")
c.close()

# SUB to a topic that does not exist yet: OK at once (nsqd creates it); its first
# message arrives once something publishes it
c = Conn()
c.cmd("SUB nsq_fresh ch")
c.expect(FRAME_RESPONSE, b"OK", "SUB to a new topic")
c.cmd("RDY 1")
p = Conn()
p.cmd("PUB nsq_fresh", b"first")
p.expect(FRAME_RESPONSE, b"OK", "PUB to the new topic")
m = c.message()
check(m["body"] == b"first", "message of the new topic")
c.cmd("FIN " + m["id"])

# states and parameters once subscribed
c = Conn()
c.cmd("SUB nsq_fresh ch")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("IDENTIFY", b"{}")
c.expect_fatal("E_INVALID cannot IDENTIFY in current state", "IDENTIFY after SUB")
c = Conn()
c.cmd("SUB nsq_fresh ch")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("AUTH", b"secret")
c.expect_fatal("E_INVALID cannot AUTH in current state", "AUTH after SUB")
c = Conn()
c.cmd("SUB nsq_fresh ch")
c.expect(FRAME_RESPONSE, b"OK", "SUB")
c.cmd("RDY abc")
c.expect_fatal("E_INVALID RDY could not parse count abc", "RDY parse")
for line, err in [("FIN", "E_INVALID FIN insufficient number of params"),
                  ("REQ 0000000000000001", "E_INVALID REQ insufficient number of params"),
                  ("TOUCH", "E_INVALID TOUCH insufficient number of params")]:
    c = Conn()
    c.cmd("SUB nsq_fresh ch")
    c.expect(FRAME_RESPONSE, b"OK", "SUB")
    c.cmd(line)
    c.expect_fatal(err, line)

# sample_rate (IDENTIFY), applied as nsqd applies it: about (rate + 1) % of the messages
# reach the client, the others are consumed unseen
c = Conn()
check(c.identify(sample_rate=20) == (FRAME_RESPONSE, b"OK"), "IDENTIFY sample_rate 20")
c.cmd("SUB nsq_fresh sampled")
c.expect(FRAME_RESPONSE, b"OK", "SUB sampled")
c.cmd("RDY 1000")
p = Conn()
for k in range(10):
    p.cmd("MPUB nsq_fresh", mpub_body([b"s%d" % i for i in range(k * 40, k * 40 + 40)]))
    p.expect(FRAME_RESPONSE, b"OK", "MPUB for sampling")
c.s.settimeout(2.0)  # bound of the wait for the last one (pass/fail is on the count)
sampled = 0
try:
    while True:
        f = c.frame()
        if f is None or f[0] != FRAME_MESSAGE:
            break
        sampled += 1
        c.cmd("FIN " + f[1][10:26].decode())
except socket.timeout:
    pass
check(20 <= sampled <= 180, "sample_rate 20: %d of 400 delivered" % sampled)
c.close()

# ---- nsqd HTTP ----
st, body, hdr = http(HTTP, "GET", "/ping")
check(st == 200 and body == b"OK", "/ping")
st, body, hdr = http(HTTP, "GET", "/info")
info = json.loads(body)
check(st == 200 and info["tcp_port"] == int(TCP.rsplit(":", 1)[1]), "/info %r" % info)
check(hdr.get("X-NSQ-Content-Type") == "nsq; version=1.0", "X-NSQ-Content-Type")
st, body, _ = http(HTTP, "POST", "/pub?topic=nsq_http", b"h1")
check(st == 200 and body == b"OK", "/pub %d %r" % (st, body))
st, body, _ = http(HTTP, "POST", "/pub?topic=nsq_http", b"")
check(st == 400 and json.loads(body) == {"message": "MSG_EMPTY"}, "/pub empty")
st, body, _ = http(HTTP, "POST", "/pub", b"x")
check(st == 400 and json.loads(body) == {"message": "MISSING_ARG_TOPIC"}, "/pub no topic")
st, body, _ = http(HTTP, "POST", "/pub?topic=bad!t", b"x")
check(st == 400 and json.loads(body) == {"message": "INVALID_TOPIC"}, "/pub bad topic")
st, body, _ = http(HTTP, "POST", "/pub?topic=nsq_http", b"x" * 100000)
check(st == 413 and json.loads(body) == {"message": "MSG_TOO_BIG"}, "/pub too big")
st, body, _ = http(HTTP, "POST", "/pub?topic=nsq_http&defer=1000", b"x")
check(st == 400 and json.loads(body) == {"message": "DEFER_NOT_SUPPORTED"}, "/pub defer")
st, body, _ = http(HTTP, "POST", "/mpub?topic=nsq_http", b"h2\nh3\n\nh4\n")
check(st == 200 and body == b"OK", "/mpub text")
st, body, _ = http(HTTP, "POST", "/mpub?topic=nsq_http&binary=true", mpub_body([b"h5", b"h\n6"]))
check(st == 200 and body == b"OK", "/mpub binary")
st, body, _ = http(HTTP, "POST", "/mpub?topic=nsq_http&binary=true", struct.pack(">I", 0))
check(st == 413 and json.loads(body) == {"message": "BAD_BODY"}, "/mpub binary bad count")
st, body, _ = http(HTTP, "POST", "/topic/create?topic=nsq_made")
check(st == 200, "/topic/create")
st, body, _ = http(HTTP, "POST", "/topic/delete?topic=nsq_made")
check(st == 501 and json.loads(body)["message"].startswith("NOT_SUPPORTED"), "/topic/delete")
st, body, _ = http(HTTP, "POST", "/topic/delete?topic=nsq_none")
check(st == 404 and json.loads(body) == {"message": "TOPIC_NOT_FOUND"}, "/topic/delete unknown")
st, body, _ = http(HTTP, "POST", "/channel/create?topic=nsq_http&channel=made")
check(st == 200, "/channel/create %d %r" % (st, body))
st, body, _ = http(HTTP, "POST", "/channel/create?topic=nsq_http")
check(st == 400 and json.loads(body) == {"message": "MISSING_ARG_CHANNEL"}, "/channel/create")
st, body, _ = http(HTTP, "POST", "/channel/delete?topic=nsq_http&channel=made")
check(st == 501, "/channel/delete")
st, body, _ = http(HTTP, "GET", "/pub?topic=nsq_http")
check(st == 405, "/pub with GET")
st, body, _ = http(HTTP, "GET", "/nope")
check(st == 404, "unknown path")
# the channel made before: it holds every message published since (h1 .. h6)
c = Conn()
c.cmd("SUB nsq_http made")
c.expect(FRAME_RESPONSE, b"OK", "SUB made")
c.cmd("RDY 10")
hb = set()
while len(hb) < 6:
    m = c.message()
    hb.add(m["body"])
    c.cmd("FIN " + m["id"])
check(hb == {b"h1", b"h2", b"h3", b"h4", b"h5", b"h\n6"}, "HTTP-published messages: %r" % hb)
st, body, _ = http(HTTP, "GET", "/stats?format=json")
stats = json.loads(body)
check(st == 200 and stats["health"] == "OK" and "producers" in stats, "/stats")
t = {x["topic_name"]: x for x in stats["topics"]}
check(t["nsq_t1"]["message_count"] == total, "/stats message_count %r" % t["nsq_t1"])
ch = {x["channel_name"]: x for x in t["nsq_http"]["channels"]}
check(ch["made"]["client_count"] == 1 and len(ch["made"]["clients"]) == 1, repr(ch["made"]))
for key in ("depth", "backend_depth", "in_flight_count", "deferred_count", "message_count",
            "requeue_count", "timeout_count", "paused", "e2e_processing_latency"):
    check(key in ch["made"], "channel stats key " + key)
st, body, _ = http(HTTP, "GET", "/stats")
check(st == 200 and b"nsq_t1" in body, "/stats text")

# ---- Prometheus /metrics ----
st, body, hdr = http(HTTP, "GET", "/metrics")
check(st == 200 and hdr["Content-Type"].startswith("text/plain; version=0.0.4"),
      "/metrics %d %s" % (st, hdr["Content-Type"]))
if METRICS_OUT:
    open(METRICS_OUT, "wb").write(body)
met, typed = {}, {}
for line in body.decode().split("\n"):
    if line.startswith("# TYPE "):
        typed[line.split()[2]] = line.split()[3]
    elif line and not line.startswith("#"):
        k, v = line.rsplit(" ", 1)
        met[k] = float(v)


def m(name, **labels):
    key = name + ("{" + ",".join('%s="%s"' % kv for kv in labels.items()) + "}" if labels
                  else "")
    check(key in met, "metric %s present" % key)
    return met.get(key, -1)


check(m("sluice_nsqd_messages_published_total", topic="nsq_t1") == total,
      "published_total of nsq_t1 = %d" % total)
check(m("sluice_nsqd_messages_delivered_total", topic="nsq_t1", channel="ch1") >= total,
      "delivered_total of nsq_t1/ch1")
check(m("sluice_nsqd_messages_finished_total", topic="nsq_t1", channel="ch1") >= 1,
      "finished_total of nsq_t1/ch1")
check(m("sluice_nsqd_messages_requeued_total", topic="nsq_t1", channel="ch1") >= 1,
      "requeued_total of nsq_t1/ch1")
check(m("sluice_nsqd_errors_total", cause="E_BAD_TOPIC") >= 3, "errors_total E_BAD_TOPIC")
check(m("sluice_nsqd_errors_total", cause="E_FIN_FAILED") >= 1, "errors_total E_FIN_FAILED")
check(m("sluice_nsqd_errors_total", cause="E_BAD_PROTOCOL") >= 1, "errors_total E_BAD_PROTOCOL")
check(m("sluice_nsqd_connections_total") >= 3 and m("sluice_nsqd_connections") >= 1,
      "connections")
# the 50 PUBs of one write left in fewer sluice requests (publish batching)
check(0 < m("sluice_nsqd_sluice_publishes_total") + 40 <=
      m("sluice_nsqd_sluice_published_messages_total"),
      "sluice publishes batch messages: %d requests for %d messages" %
      (m("sluice_nsqd_sluice_publishes_total"),
       m("sluice_nsqd_sluice_published_messages_total")))
h = "sluice_nsqd_sluice_publish_duration_seconds"
check(typed.get(h) == "histogram", "%s is a histogram" % h)
buckets = [(k, v) for k, v in met.items() if k.startswith(h + "_bucket")]
check(len(buckets) >= 2 and all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
      "histogram buckets cumulative")
check(m(h + "_bucket", le="+Inf") == m(h + "_count") >= 1, "histogram +Inf = count")
for k in met:
    fam = k.split("{")[0]
    base = fam[:-len("_bucket")] if fam.endswith("_bucket") else fam
    base = base[:-len("_sum")] if base.endswith("_sum") else base
    base = base[:-len("_count")] if base.endswith("_count") and base not in typed else base
    check(base in typed, "%s has # TYPE" % k)
    check(typed.get(base) != "counter" or fam.endswith("_total"), "counter %s ends _total" % k)
st, body, _ = http(HTTP, "POST", "/metrics", b"")
check(st == 405, "POST /metrics: 405")

# ---- nsqlookupd HTTP ----
st, body, _ = http(LOOKUPD, "GET", "/ping")
check(st == 200 and body == b"OK", "lookupd /ping")
st, body, _ = http(LOOKUPD, "GET", "/lookup?topic=nsq_t1")
lk = json.loads(body)
check(st == 200 and lk["producers"][0]["tcp_port"] == int(TCP.rsplit(":", 1)[1]) and
      lk["producers"][0]["broadcast_address"] == TCP.rsplit(":", 1)[0] and "ch1" in lk["channels"],
      "/lookup %r" % lk)
st, body, _ = http(LOOKUPD, "GET", "/lookup")
check(st == 400 and json.loads(body) == {"message": "MISSING_ARG_TOPIC"}, "/lookup no topic")
st, body, _ = http(LOOKUPD, "GET", "/topics")
check(st == 200 and "nsq_t1" in json.loads(body)["topics"], "/topics")
st, body, _ = http(LOOKUPD, "GET", "/channels?topic=nsq_t1")
check(st == 200 and json.loads(body)["channels"] == ["ch1"], "/channels")
st, body, _ = http(LOOKUPD, "GET", "/nodes")
nodes = json.loads(body)["producers"]
check(st == 200 and len(nodes) == 1 and "nsq_t1" in nodes[0]["topics"], "/nodes")

print("nsq_proto: %d checks passed" % checks)
