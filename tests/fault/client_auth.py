#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Client tokens against a live sluiced started with --token-file (run by client_auth.sh
# inside the test's namespace, on the kernel side of the node's net_tap port):
#   - HELLO without a token, with an unknown one: ERR SL_E_AUTH and no session; a bad
#     token length: SL_E_MALFORMED;
#   - a publish-only token cannot SUB; a pattern limits the topics; rights add up;
#   - the admin right: auto-creating a topic, a durable channel by SUB, SET_OFFSET; an
#     ephemeral SUB and joining an operator's channel need only sub;
#   - a token given in the file by its blake2b: hash works;
#   - a refused request is not remembered by the idempotency window: the same seq runs once
#     the right is given;
#   - --auto-topics-per-source: one address creates at most 2 topics (SL_E_LIMIT), another
#     still may;
#   - `sluicectl token reload`: a removed token's live session is refused (SL_E_AUTH), gets
#     no more deliveries and cannot HELLO again; other sessions keep working and get their
#     new rights; a file with an error changes nothing;
#   - `token list` shows names and rules, never a token; sluice-pub/sluice-sub with
#     --token-file and SLUICE_TOKEN.
import json, os, select, socket, struct, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import slproto  # noqa: E402
from slproto import (E, OP, addr, check, err_code, err_text, hdr, ok_fields,  # noqa: E402
                     pub_body, setoff_body, sub_body)

BROKER, CTL, CTL_SOCK, TOKDIR, PUB, SUB = sys.argv[1:7]
HOSTS = sys.argv[7:]
PORT = 5150
def ctl_raw(*args):
    return slproto.ctl_run(CTL, CTL_SOCK, *args)


def ctl(*args):
    return slproto.ctl_json(CTL, CTL_SOCK, *args)


def token(name):
    with open(os.path.join(TOKDIR, name + ".token")) as f:
        return f.read().strip().encode()


def is_ok(d):
    return d is not None and d[3] == OP["OK"]


def hello_body(tok):
    b = struct.pack(">II", 0, 0)
    return b if tok is None else b + struct.pack(">B", len(tok)) + tok


class Client:
    """One socket; HELLO with an optional token; answers matched by seq, MSGs kept."""

    def __init__(self, tok=None, src=None, raw_hello=None):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if src:
            self.s.bind((src, 0))
        self.dst = (BROKER, PORT)
        self.msgs = []
        self.seq = 0
        self.sess = 0
        body = raw_hello if raw_hello is not None else hello_body(tok)
        self.hello = self.xchg(hdr(OP["HELLO"], body, cookie=0xABC), seq=1)
        if self.hello is not None and self.hello[3] == OP["WELCOME"]:
            self.sess = struct.unpack(">Q", self.hello[32:40])[0]

    def recv(self, timeout):
        r, _, _ = select.select([self.s], [], [], timeout)
        return self.s.recv(65535) if r else None

    def xchg(self, frame, seq, timeout=1.0, tries=4):
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
                if struct.unpack(">Q", d[16:24])[0] == seq:
                    return d
        return None

    def req(self, op, body, seq=None):
        if seq is None:
            self.seq += 1
            seq = self.seq
        return self.xchg(hdr(op, body, self.sess, seq), seq=seq)

    def drain(self, t):
        end = time.time() + t
        while time.time() < end:
            d = self.recv(end - time.time())
            if d is not None and d[3] == OP["MSG"]:
                self.msgs.append(d)


def msg_count(topic):
    return ctl("topic", "info", topic)["partition_info"][0]["message_count"]


def topics():
    return {t["name"] for t in ctl("topic", "list")["topics"]}


def write_tokens(text):
    path = os.path.join(TOKDIR, "tokens.conf")
    tmp = path + ".new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, text.encode())
    os.close(fd)
    os.rename(tmp, path)


def refused():
    n0 = ctl("sessions")["count"]
    c = Client(None)
    check(err_code(c.hello) == E["AUTH"] and c.sess == 0,
          "HELLO without a token: SL_E_AUTH, no session (%s)" % err_text(c.hello))
    c = Client(b"x" * 64)
    check(err_code(c.hello) == E["AUTH"] and c.sess == 0 and "unknown" in err_text(c.hello),
          "HELLO with an unknown token: SL_E_AUTH (%s)" % err_text(c.hello))
    c = Client(token("pubonly")[:-1])
    check(err_code(c.hello) == E["AUTH"], "a known token minus its last byte: SL_E_AUTH")
    bad = struct.pack(">IIB", 0, 0, 40) + b"y" * 10
    c = Client(raw_hello=bad)
    check(err_code(c.hello) == E["MALFORMED"], "token length past the body: SL_E_MALFORMED")
    c = Client(raw_hello=struct.pack(">IIB", 0, 0, 0))
    check(err_code(c.hello) == E["MALFORMED"], "token length 0: SL_E_MALFORMED")
    check(ctl("sessions")["count"] == n0, "no session was opened by those HELLOs")
    # a session id guessed or taken from elsewhere still needs the session's source
    c = Client(None)
    d = c.xchg(hdr(OP["PUB"], pub_body(b"orders", b"x"), sess=0x123456789, seq=1), seq=1)
    check(err_code(d) == E["SESSION"], "a request with an unknown session: SL_E_SESSION")


def rights():
    p = Client(token("pubonly"))
    check(p.sess != 0, "pubonly: HELLO with its token gets a session")
    n = msg_count("orders")
    check(is_ok(p.req(OP["PUB"], pub_body(b"orders", b"m1"))), "pubonly: PUB orders OK")
    d = p.req(OP["SUB"], sub_body(b"orders", b"ops"))
    check(err_code(d) == E["DENIED"] and "sub right" in err_text(d),
          "pubonly cannot SUB: SL_E_DENIED (%s)" % err_text(d))
    d = p.req(OP["PUB"], pub_body(b"billing.eu", b"no"))
    check(err_code(d) == E["DENIED"], "pubonly: PUB billing.eu (not its pattern): SL_E_DENIED")
    check(msg_count("orders") == n + 1 and msg_count("billing.eu") == 0,
          "only the allowed publish was written")

    b = Client(token("billing"))
    check(is_ok(b.req(OP["PUB"], pub_body(b"billing.eu", b"b1"))) and
          is_ok(b.req(OP["PUB"], pub_body(b"billing.us", b"b2"))),
          "billing (pub,sub billing.*): PUB billing.eu and billing.us OK")
    check(err_code(b.req(OP["PUB"], pub_body(b"orders", b"no"))) == E["DENIED"],
          "billing: PUB orders: SL_E_DENIED")
    d = b.req(OP["SUB"], sub_body(b"billing.eu", b"newchan"))
    check(err_code(d) == E["DENIED"] and "admin" in err_text(d),
          "billing: SUB creating a durable channel needs admin (%s)" % err_text(d))
    chans = {c["name"] for c in ctl("topic", "info", "billing.eu")["partition_info"][0]
             ["channels"]}
    check("newchan" not in chans, "and the channel was not created")
    check(is_ok(b.req(OP["SUB"], sub_body(b"billing.eu", b"tmp", flags=2))),
          "billing: SUB EPHEMERAL creates its channel with sub alone")
    check(is_ok(b.req(OP["SUB"], sub_body(b"billing.eu", b"opchan"))),
          "billing: SUB joins the operator's channel")
    d = b.req(OP["SET_OFFSET"], setoff_body(b"billing.eu", b"opchan"))
    check(err_code(d) == E["DENIED"], "billing: SET_OFFSET needs admin: SL_E_DENIED")
    d = b.req(OP["PUB"], pub_body(b"billing.new", b"x"))
    check(err_code(d) == E["DENIED"] and "billing.new" not in topics(),
          "billing: auto-creating billing.new needs admin: SL_E_DENIED, not created (%s)" %
          err_text(d))
    check(is_ok(b.req(OP["RDY"], addr(b"billing.eu", b"opchan") + struct.pack(">I", 4))),
          "billing: RDY on its subscription OK")

    r = Client(token("reader"))
    check(is_ok(r.req(OP["SUB"], sub_body(b"orders", b"opchan"))),
          "reader (sub *): SUB orders/opchan OK")
    check(err_code(r.req(OP["PUB"], pub_body(b"orders", b"no"))) == E["DENIED"],
          "reader: PUB: SL_E_DENIED")

    a = Client(token("admin"))
    check(is_ok(a.req(OP["SUB"], sub_body(b"billing.eu", b"newchan"))),
          "admin: SUB creates a durable channel")
    check(is_ok(a.req(OP["SET_OFFSET"], setoff_body(b"billing.eu", b"opchan"))),
          "admin: SET_OFFSET OK")

    h = Client(token("hashed"))
    check(h.sess != 0 and is_ok(h.req(OP["PUB"], pub_body(b"audit", b"h"))),
          "a token listed by its blake2b: hash opens a session and publishes")
    return p


def auto_topics():
    a = Client(token("admin"), src=HOSTS[0])
    got = [a.req(OP["PUB"], pub_body(b"auto%d" % i, b"x")) for i in range(3)]
    check(is_ok(got[0]) and is_ok(got[1]), "admin from address A auto-creates 2 topics")
    check(err_code(got[2]) == E["LIMIT"] and "this address" in err_text(got[2]) and
          "auto2" not in topics(),
          "a third from A: SL_E_LIMIT (%s), not created" % err_text(got[2]))
    a2 = Client(token("admin"), src=HOSTS[1])
    check(is_ok(a2.req(OP["PUB"], pub_body(b"auto9", b"x"))),
          "from address B, still one more")
    subprocess.run([CTL, "-s", CTL_SOCK, "topic", "delete", "auto0"], capture_output=True,
                   timeout=30)
    check(is_ok(a.req(OP["PUB"], pub_body(b"auto3", b"x"))),
          "A's topic deleted: A may create one again")


def reload(p):
    v = Client(token("victim"))
    keep = Client(token("billing"))
    check(v.sess != 0 and is_ok(v.req(OP["SUB"], sub_body(b"orders", b"vchan", flags=2))),
          "victim subscribes to orders")
    adm = Client(token("admin"))
    adm.req(OP["PUB"], pub_body(b"orders", b"before"))
    v.drain(0.5)
    check(len(v.msgs) >= 1, "victim gets deliveries before the reload (%d)" % len(v.msgs))
    # pubonly's refused publish (seq kept): not cached, it runs once the right is given
    p.seq += 1
    denied_seq = p.seq
    d = p.req(OP["PUB"], pub_body(b"billing.us", b"later"), seq=denied_seq)
    check(err_code(d) == E["DENIED"], "pubonly: PUB billing.us: SL_E_DENIED")

    base = open(os.path.join(TOKDIR, "tokens.base")).read()
    write_tokens(base + "allow pubonly pub billing.us\n")
    # a broken file first: nothing changes
    good = open(os.path.join(TOKDIR, "tokens.conf")).read()
    write_tokens(good + "allow nobody pub x\n")
    out = ctl_raw("token", "reload")
    check(out.returncode == 1 and "tokens.conf:" in out.stdout and "nobody" in out.stdout,
          "reload of a file with an error is refused with FILE:LINE (%s)" % out.stdout.strip())
    check(is_ok(v.req(OP["NOP"], b"")) and
          err_code(p.req(OP["PUB"], pub_body(b"billing.us", b"later"))) == E["DENIED"],
          "and the tokens in use are unchanged")
    write_tokens(good)
    n_us = msg_count("billing.us")
    out = ctl("token", "reload")
    check(out.get("sessions_revoked", 0) >= 1, "reload: victim's session(s) revoked (%s)" %
          out.get("sessions_revoked"))
    d = v.req(OP["PUB"], pub_body(b"orders", b"after"))
    check(err_code(d) == E["AUTH"], "victim's live session: SL_E_AUTH (%s)" % err_text(d))
    check(err_code(v.req(OP["NOP"], b"")) == E["AUTH"], "victim's NOP: SL_E_AUTH")
    n_before = len(v.msgs)
    adm.req(OP["PUB"], pub_body(b"orders", b"after-reload"))
    v.drain(0.5)
    check(len(v.msgs) == n_before, "victim gets no delivery after the reload")
    v2 = Client(token("victim"))
    check(err_code(v2.hello) == E["AUTH"], "victim's HELLO: SL_E_AUTH")
    check(is_ok(keep.req(OP["PUB"], pub_body(b"billing.eu", b"still"))),
          "billing's session keeps working")
    d = p.req(OP["PUB"], pub_body(b"billing.us", b"later"), seq=denied_seq)
    check(is_ok(d) and msg_count("billing.us") == n_us + 1,
          "pubonly's refused seq runs now that the right is given (not cached)")
    lst = ctl("token", "list")
    names = {t["name"]: t["allow"] for t in lst["tokens"]}
    check("victim" not in names and names.get("pubonly") == ["pub orders", "pub billing.us"],
          "token list: names and rules (%s)" % names.get("pubonly"))
    text = json.dumps(lst)
    check(all(token(n).decode() not in text for n in ("pubonly", "admin", "billing")),
          "token list shows no token")
    sess = ctl("sessions")["sessions"]
    check(any(s.get("token") == "billing" for s in sess), "sessions show the token's name")


def tools():
    env = dict(os.environ, SLUICE_ADDR=BROKER)
    env.pop("SLUICE_TOKEN", None)
    n = msg_count("orders")
    r = subprocess.run([PUB, "-q", "--token-file", os.path.join(TOKDIR, "pubonly.token"),
                        "orders"], input="l1\nl2\n", capture_output=True, text=True,
                       timeout=30, env=env)
    check(r.returncode == 0 and msg_count("orders") == n + 2,
          "sluice-pub --token-file publishes (%s)" % r.stderr.strip())
    r = subprocess.run([PUB, "-q", "orders"], input="l3\n", capture_output=True, text=True,
                       timeout=30, env=env)
    check(r.returncode != 0 and "token" in r.stderr,
          "sluice-pub without a token is refused (%s)" % r.stderr.strip())
    env["SLUICE_TOKEN"] = token("pubonly").decode()
    r = subprocess.run([PUB, "-q", "orders"], input="l4\n", capture_output=True, text=True,
                       timeout=30, env=env)
    check(r.returncode == 0 and msg_count("orders") == n + 3,
          "sluice-pub with SLUICE_TOKEN publishes (%s)" % r.stderr.strip())
    env.pop("SLUICE_TOKEN")
    r = subprocess.run([SUB, "--token-file", os.path.join(TOKDIR, "reader.token"), "-c",
                        "toolchan", "-n", "1", "-t", "10", "orders"],
                       capture_output=True, text=True, timeout=30, env=env)
    check(r.returncode == 0 and len(r.stdout.splitlines()) == 1,
          "sluice-sub --token-file consumes (%s)" % r.stderr.strip())


def open_mode():
    c = Client(None)
    check(c.sess != 0, "open mode: HELLO without a token gets a session")
    c2 = Client(b"z" * 40)
    check(c2.sess != 0, "open mode: a HELLO with a token gets one too (not checked)")
    check(is_ok(c.req(OP["PUB"], pub_body(b"orders", b"x"))) and
          is_ok(c.req(OP["SUB"], sub_body(b"orders", b"any"))),
          "open mode: PUB and SUB without a token")
    st = ctl("status")
    check(st.get("client_auth") == "open", "status: client_auth open")
    out = ctl_raw("token", "reload")
    check(out.returncode == 1 and "no --token-file" in out.stdout,
          "token reload in open mode: refused, says the node runs open")


if os.environ.get("AUTH_MODE") == "open":
    open_mode()
else:
    refused()
    pubonly = rights()
    auto_topics()
    reload(pubonly)
    tools()

slproto.finish()
