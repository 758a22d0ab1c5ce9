#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
"""placement.py: where the benchmark's processes ran and what CPU they used, for
tools/bench/run and tools/bench/peers/peers.sh.

  placement.py watch --state FILE [--ready FILE] [--labels-file FILE] [--ctl LABEL=SOCK ...]
                     [LABEL=PID ...]
      Samples every 50 ms, until SIGTERM, each named process and its descendants (those
      named on the command line and those in the lines LABEL=PID of --labels-file, read
      again at every sample, so a caller can start the watcher first, wait for --ready to
      appear after the first sample, then start the load generator and name it): per thread
      its CPU time (utime + stime, /proc/PID/task/TID/stat), the core it last ran on (field
      39, 'processor') and the cores it may run on (Cpus_allowed_list); per process its CPU
      time as a time series; the whole machine's CPU time (/proc/stat) to tell how much the
      processes not started here took; with --ctl, the sluiced workers' busy-cycle counters
      ("stats workers" on the control socket) at the start and at the end. Writes FILE (JSON)
      on SIGTERM and exits 0.

  placement.py tag --state FILE --results JSONL --from N [--broker LABEL ...]
                   [--set KEY=VALUE ...] [--title TEXT] [--generator-cpu] [--refuse-shared]
      Prints the placement of every process watched (stderr), warns loudly when a busy
      thread (running or runnable at least half of the run, /proc/.../schedstat: a busy
      poller starved by other processes still counts) shares a core with another busy
      thread, and
      adds to the result lines N+1.. of JSONL (those the run appended):
        the KEY=VALUE pairs (transport, durability, rf, run, ...; numbers stay numbers),
        "placement" (the busy threads and DPDK's lcore threads: label/thread@allowed cores
          and CPU use),
        "shared_cores" (true/false), "others_cores" (cores used by processes not watched),
        "proc_cpu_ns_per_msg": the --broker processes' whole-process CPU over the client's
          measured phase (its last elapsed_s seconds before it exited: the per-process time
          series, interpolated; a phase spanning under 3 samples takes the process's average
          CPU rate over the whole watch) per acked message; a value the load generator measured
          itself (the peers' generators read /proc of the server over their measured phase)
          is taken instead with --generator-cpu when it has one (its cpu_ns_per_msg then
          becomes -1: that field is sluice's worker busy-cycle figure only),
        "node_cpu": per --broker label, whole-process ns/msg and (with --ctl) worker
          busy-cycle ns/msg over the whole run (warm-up included: busy cycles only count
          loop iterations that did work), for the replication estimate.
      Exit status 3 with --refuse-shared when cores were shared, else 0.
"""
import json
import os
import signal
import socket
import sys
import time

PERIOD = 0.05
BUSY = 0.5      # busy: on a CPU or waiting for one at least half of the run (schedstat)
CLK = os.sysconf("SC_CLK_TCK")
LCORE = ("rte-worker", "lcore-worker")     # DPDK's names of its lcore threads


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def stat_fields(text):
    """(comm, fields from field 3 on) of a /proc stat line."""
    i, j = text.index("("), text.rindex(")")
    return text[i + 1:j], text[j + 2:].split()


def proc_cpu(pid):
    t = read(f"/proc/{pid}/stat")
    if t is None:
        return None
    _, f = stat_fields(t)
    return (int(f[11]) + int(f[12])) / CLK


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        t = read(f"/proc/{d}/stat")
        if t is None:
            continue
        try:
            _, f = stat_fields(t)
        except ValueError:
            continue
        kids.setdefault(int(f[1]), []).append(int(d))
    return kids


def tree(root, kids):
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def machine_cpu():
    """Busy CPU seconds of the whole machine (user, nice, system, irq, softirq, steal)."""
    t = read("/proc/stat") or ""
    for line in t.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / CLK
    return 0.0


def ctl_busy(sock):
    """(sum of the workers' busy cycles, TSC Hz) from sluiced's control socket, or None."""
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sock)
        s.sendall(b"stats workers\n")
        buf = b""
        while b"\n" not in buf:
            r = s.recv(65536)
            if not r:
                break
            buf += r
        s.close()
        d = json.loads(buf.split(b"\n")[0])
    except (OSError, ValueError):
        return None
    busy = 0

    def walk(x):
        nonlocal busy
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "busy_cycles" and isinstance(v, int):
                    busy += v
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(d)
    hz = d.get("tsc_hz") if isinstance(d, dict) else None
    return (busy, hz) if hz else None


def watch(args):
    state = ready = lfile = None
    labels, ctls = {}, {}
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--state", "--ready", "--labels-file"):
            if a == "--state":
                state = args[i + 1]
            elif a == "--ready":
                ready = args[i + 1]
            else:
                lfile = args[i + 1]
            i += 2
            continue
        if a == "--ctl":
            k, v = args[i + 1].split("=", 1)
            ctls[k] = v
            i += 2
            continue
        k, v = a.split("=", 1)
        labels[k] = int(v)
        i += 1
    if state is None:
        print(__doc__, file=sys.stderr)
        return 2
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    threads = {}        # tid -> record
    series = {}         # label -> [(t, cpu s of the root process)]
    busy0 = {k: ctl_busy(s) for k, s in ctls.items()}
    t0, m0 = time.monotonic(), machine_cpu()
    while True:
        now = time.monotonic()
        for line in (read(lfile) or "").splitlines() if lfile else []:
            if "=" in line:
                k, v = line.strip().split("=", 1)
                labels.setdefault(k, int(v))
        kids = children_map()
        for lab, root in labels.items():
            c = proc_cpu(root)
            if c is not None:
                series.setdefault(lab, []).append((now, c))
            for pid in tree(root, kids):
                try:
                    tids = os.listdir(f"/proc/{pid}/task")
                except OSError:
                    continue
                for tid in tids:
                    st = read(f"/proc/{pid}/task/{tid}/stat")
                    stt = read(f"/proc/{pid}/task/{tid}/status")
                    if st is None or stt is None:
                        continue
                    comm, f = stat_fields(st)
                    cpu = (int(f[11]) + int(f[12])) / CLK
                    allowed = ""
                    for line in stt.splitlines():
                        if line.startswith("Cpus_allowed_list:"):
                            allowed = line.split(":", 1)[1].strip()
                    # schedstat: ns on the CPU, ns runnable but waiting for it
                    ss = (read(f"/proc/{pid}/task/{tid}/schedstat") or "0 0").split()
                    want = (int(ss[0]) + int(ss[1])) / 1e9
                    r = threads.get(tid)
                    if r is None:
                        r = threads[tid] = {"label": lab, "pid": pid, "tid": int(tid),
                                            "comm": comm, "allowed": allowed, "cpu0": cpu,
                                            "t0": now, "ran_on": [], "want0": want}
                    r.update(cpu1=cpu, t1=now, comm=comm, allowed=allowed, want1=want)
                    if int(f[36]) not in r["ran_on"]:
                        r["ran_on"].append(int(f[36]))
        if ready and not os.path.exists(ready):
            open(ready, "w").close()
        if stop:
            break
        time.sleep(PERIOD)
    t1, m1 = time.monotonic(), machine_cpu()
    ours = sum(r["cpu1"] - r["cpu0"] for r in threads.values())
    out = {"wall_s": t1 - t0, "machine_cpu_s": m1 - m0, "ours_cpu_s": ours,
           "ncpu": os.cpu_count(), "loadavg": (read("/proc/loadavg") or "").split()[:3],
           "labels": labels, "series": series, "threads": list(threads.values()),
           "busy": {k: [busy0.get(k), ctl_busy(s)] for k, s in ctls.items()},
           "end": t1}
    with open(state, "w") as f:
        json.dump(out, f)
    return 0


def cpus(s):
    out = set()
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def use(r):
    w = r["t1"] - r["t0"]
    return (r["cpu1"] - r["cpu0"]) / w if w > 0.02 else 0.0


def want(r):
    """Share of the time the thread ran or was runnable (waiting for a CPU): a busy poller
    wants all of it even when other processes leave it little CPU time."""
    w = r["t1"] - r["t0"]
    return (r.get("want1", 0) - r.get("want0", 0)) / w if w > 0.02 else 0.0


def cpu_between(series, a, b):
    """CPU seconds of a process between monotonic times a and b (linear interpolation)."""
    def at(t):
        if not series:
            return 0.0
        if t <= series[0][0]:
            return series[0][1]
        for (ta, ca), (tb, cb) in zip(series, series[1:]):
            if ta <= t <= tb:
                return ca + (cb - ca) * (t - ta) / (tb - ta) if tb > ta else cb
        return series[-1][1]
    return at(b) - at(a)


def analyse(st):
    """(lines to print, compact placement text, shared?)"""
    lines, compact, warn = [], [], []
    ths = st["threads"]
    for r in ths:
        r["use"] = use(r)
        r["want"] = want(r)
        # a thread that barely ran is not polling, however long it queued for a CPU
        r["busy"] = r["use"] >= BUSY or (r["want"] >= BUSY and r["use"] >= 0.03)
        r["set"] = cpus(r["allowed"])
    idle = ("eal-intr-thread", "rte_mp_handle", "telemetry-v2", "rte-mp-handle")
    shown = [r for r in ths if r["busy"] or r["use"] >= 0.05 or r["tid"] == r["pid"] or
             (len(r["set"]) == 1 and r["comm"] not in idle)]
    for r in sorted(shown, key=lambda r: (r["label"], r["tid"])):
        lines.append(f"  {r['label']:<10} pid {r['pid']:<7} tid {r['tid']:<7} "
                     f"{r['comm']:<16} allowed {r['allowed']:<5} ran on "
                     f"{','.join(map(str, r['ran_on'])):<5} cpu {100 * r['use']:5.1f} % "
                     f"runnable {100 * max(0.0, r['want'] - r['use']):5.1f} %"
                     + ("  BUSY" if r["busy"] else ""))
        if r["busy"] or (len(r["set"]) == 1 and r["comm"].startswith(LCORE)):
            compact.append(f"{r['label']}/{r['comm']}@{r['allowed']}"
                           + (f" {100 * r['use']:.0f}%" if r["busy"] else ""))
    busy = [r for r in ths if r["busy"]]
    for i, a in enumerate(busy):
        for b in busy[i + 1:]:
            if len(a["set"]) == 1 and a["set"] == b["set"]:
                warn.append(f"{a['label']}/{a['comm']} and {b['label']}/{b['comm']} are both "
                            f"pinned to CPU {a['allowed']}")
            elif (len(a["set"]) == 1 and a["set"] <= b["set"] and
                  set(b["ran_on"]) & a["set"]) or \
                 (len(b["set"]) == 1 and b["set"] <= a["set"] and set(a["ran_on"]) & b["set"]):
                warn.append(f"{a['label']}/{a['comm']} (CPU {a['allowed']}) and "
                            f"{b['label']}/{b['comm']} (CPU {b['allowed']}) ran on the same CPU")
    avail = set()
    for r in busy:
        avail |= r["set"]
    if busy and len(busy) > len(avail):
        warn.append(f"{len(busy)} busy threads for {len(avail)} CPU(s) "
                    f"({','.join(map(str, sorted(avail)))})")
    others = max(0.0, st["machine_cpu_s"] - st["ours_cpu_s"]) / st["wall_s"] \
        if st["wall_s"] > 0 else 0.0
    return lines, compact, warn, others


def tag(args):
    o = {"broker": [], "set": [], "title": "", "refuse": False, "gen": False}
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--refuse-shared", "--generator-cpu"):
            o["refuse" if a == "--refuse-shared" else "gen"] = True
            i += 1
            continue
        k = a[2:]
        v = args[i + 1]
        if k in ("broker", "set"):
            o[k].append(v)
        else:
            o[k] = v
        i += 2
    st = json.load(open(o["state"]))
    lines, compact, warn, others = analyse(st)
    print(f"placement{': ' + o['title'] if o['title'] else ''} "
          f"({st['ncpu']} CPUs, load average {' '.join(st['loadavg'])}, processes not "
          f"started here used {others:.2f} cores over the run)", file=sys.stderr)
    for line in lines:
        print(line, file=sys.stderr)
    for w in warn:
        print(f"!!! SHARED CORE: {w}: busy-polling threads time-slice; rates and latencies "
              "of this run measure the sharing, not the program", file=sys.stderr)
    res = o["results"]
    start = int(o["from"])
    with open(res) as f:
        rows = f.readlines()
    extra = {}
    for kv in o["set"]:
        k, v = kv.split("=", 1)
        try:
            extra[k] = int(v)
        except ValueError:
            extra[k] = v
    for n in range(start, len(rows)):
        if not rows[n].strip():
            continue
        r = json.loads(rows[n])
        r.update(extra)
        r["placement"] = "; ".join(compact)
        r["shared_cores"] = bool(warn)
        r["others_cores"] = round(others, 2)
        acked = r.get("acked", 0)
        el = r.get("elapsed_s", 0)
        total = acked + r.get("count", 0) // 10        # the default warm-up: count / 10
        node = {}
        proc = 0.0
        for lab in o["broker"]:
            s = st["series"].get(lab, [])
            nd = {}
            if s and acked > 0 and el > 0:
                end = st["end"]
                a, b = end - el - 0.02, end - 0.02
                if sum(1 for t, _ in s if a <= t <= b) >= 3:
                    c = cpu_between(s, a, b)
                else:
                    # the phase was shorter than our sampling: the run's average CPU rate
                    span = s[-1][0] - s[0][0]
                    c = (s[-1][1] - s[0][1]) * el / span if span > 0 else 0.0
                nd["proc_ns_per_msg"] = round(1e9 * c / acked, 1)
                proc += c
                if total > 0:
                    nd["proc_run_ns_per_msg"] = round(1e9 * (s[-1][1] - s[0][1]) / total, 1)
            b = st.get("busy", {}).get(lab)
            if b and b[0] and b[1] and total > 0:
                nd["busy_ns_per_msg"] = round(1e9 * (b[1][0] - b[0][0]) / b[1][1] / total, 1)
            node[lab] = nd
        if node:
            r["node_cpu"] = node
        mine = round(1e9 * proc / acked, 1) if o["broker"] and acked > 0 and proc > 0 else -1
        if o["gen"]:
            # the peers' generators measure the server's whole-process CPU themselves over
            # their measured phase (-1 under 10 clock ticks: then ours, sampled)
            g = r.get("cpu_ns_per_msg", -1)
            r["proc_cpu_ns_per_msg"] = g if g is not None and g >= 0 else mine
            r["cpu_ns_per_msg"] = -1
        elif r.get("proc_cpu_ns_per_msg") is None:
            r["proc_cpu_ns_per_msg"] = mine
        rows[n] = json.dumps(r) + "\n"
    with open(res, "w") as f:
        f.writelines(rows)
    return 3 if warn and o["refuse"] else 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("watch", "tag"):
        print(__doc__, file=sys.stderr)
        return 2
    return watch(sys.argv[2:]) if sys.argv[1] == "watch" else tag(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
