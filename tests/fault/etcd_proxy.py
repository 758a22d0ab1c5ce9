#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
"""A TCP relay in front of etcd for one node, that can cut the node off.

  etcd_proxy.py LISTEN_PORT ETCD_HOST ETCD_PORT READY_FILE

Relays every connection to 127.0.0.1:LISTEN_PORT to ETCD_HOST:ETCD_PORT. While etcd
refuses connections (it is down) the relay stops listening, so that the node's connections
are refused too, as they would be without it. SIGUSR1: cut off
(a network partition: bytes are read and dropped both ways, new connections are accepted
and never answered, so the node's calls time out rather than being refused). SIGUSR2:
heal (the held connections are closed, new ones are relayed again). Writes its PID to
READY_FILE once listening.
"""
import os
import selectors
import signal
import socket
import sys

port, host, eport, ready = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
sel = selectors.DefaultSelector()
state = {"cut": False, "heal": False}
peer = {}   # socket -> its other end (None: held while cut off)


def on_usr1(*_):
    state["cut"] = True


def on_usr2(*_):
    state["cut"] = False
    state["heal"] = True


signal.signal(signal.SIGUSR1, on_usr1)
signal.signal(signal.SIGUSR2, on_usr2)


def close(s):
    for x in (s, peer.pop(s, None)):
        if x is None:
            continue
        peer.pop(x, None)
        try:
            sel.unregister(x)
        except (KeyError, ValueError):
            pass
        x.close()


def listen():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    sel.register(s, selectors.EVENT_READ)
    return s


def upstream_up():
    try:
        socket.create_connection((host, eport), timeout=0.2).close()
        return True
    except OSError:
        return False


lsock = listen()
with open(ready + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(ready + ".tmp", ready)

while True:
    if state["heal"]:
        state["heal"] = False
        for s in list(peer):
            close(s)
    if lsock is None and upstream_up():
        lsock = listen()        # etcd is back
    try:
        events = sel.select(0.05)
    except InterruptedError:
        continue
    for key, _ in events:
        s = key.fileobj
        if s is lsock:
            c, _ = lsock.accept()
            u = None
            if not state["cut"]:
                try:
                    u = socket.create_connection((host, eport), timeout=0.2)
                except OSError:
                    # etcd is down: refuse, as etcd's host would (closing the listener)
                    c.close()
                    sel.unregister(lsock)
                    lsock.close()
                    lsock = None
                    for x in list(peer):
                        close(x)
                    break
                peer[u] = c
                sel.register(u, selectors.EVENT_READ)
            peer[c] = u
            sel.register(c, selectors.EVENT_READ)
            continue
        if s not in peer:
            continue
        try:
            d = s.recv(65536)
        except OSError:
            d = b""
        if not d:
            close(s)
            continue
        o = peer.get(s)
        if state["cut"] or o is None:
            continue        # dropped: the other side hears nothing
        try:
            o.sendall(d)
        except OSError:
            close(s)
