#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
"""Summarise a tools/bench/run result directory: a markdown table of every result (the
median of its runs, min-max), each row with its conditions (transport, batch, durability,
replication factor) and both CPU figures (the broker's whole-process CPU per message, and
sluice's worker busy cycles, which are not comparable with it); the ratio tables, which
pair only rows equal on every condition and print what matched (sluice against the peers,
one table per client transport; sluice against its ceiling and itself, naming the one
condition that varies); the core layout of every row; the estimate of replication on three
machines; the storage table (sluice-disk-bench); and PNG plots drawn by gnuplot
(throughput against message size, latency CDFs).

usage: summarize.py DIR      (DIR holds results.jsonl and cdf.dat)
"""
import json
import re
import os
import statistics
import shutil
import subprocess
import sys


PEERS = ("redis", "jetstream")
REFERENCE = ("nats-core",)      # no ack: shown, never in a ratio
STORAGE = ("disk-raw", "disklog")
STORAGE_TARGET = 0.80
SLUICE = ("sluice", "sluice-pc", "sluice-disk", "sluice-udp", "sluice-rf1", "sluice-rf3",
          "sluice-rf3-nomac", "sluice-rf1-memif", "sluice-rf3-memif")
# the conditions every row states; a ratio pairs rows equal on all of them (the transport
# of sluice's side and of the peers' side are fixed per table and printed)
CONDS = ("batch", "durability", "rf", "msg_size", "window", "producers")


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    for r in rows:
        # rows of results.jsonl files written before the conditions were recorded
        s = r["system"]
        r.setdefault("transport", "tcp-loopback" if s in PEERS + REFERENCE else
                     "udp-tap" if s.endswith("-udp") or s.startswith("sluice-rf") else
                     "file" if s in STORAGE else "memif")
        r.setdefault("durability", "fsync" if s == "sluice-disk" else "none")
        r.setdefault("rf", 3 if s.startswith("sluice-rf3") else 1)
        r.setdefault("run", 1)
        r.setdefault("ack", "no" if s in REFERENCE else "yes")
        r.setdefault("producers", 1)
        r.setdefault("proc_cpu_ns_per_msg", r["cpu_ns_per_msg"] if s in PEERS + REFERENCE
                     else -1)
        if s in PEERS + REFERENCE and "placement" not in r:
            r["cpu_ns_per_msg"] = -1
    return rows


def fmt_rate(x):
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.1f} k"


def fmt_cpu(x):
    return f"{x:.0f}" if x is not None and x >= 0 else "-"


# sluice-bench's answer counts at the end of its note (they differ from run to run)
# the kernel-UDP PUB row without bundles (tools/bench/run sec_udp)
NOBUNDLE_NOTE = "topic of 1 partition(s), 1 worker, one datagram per PUB (--no-bundle)"
ANSWERS = re.compile(r"(?:; )?acked_reqs=(\d+) refused_full=(\d+) refused_busy=(\d+) "
                     r"other_errors=(\d+) timeouts=(\d+)(?: bundled_sessions=(\d+))?")


def base_note(r):
    return ANSWERS.sub("", r.get("note", ""))


def answer_counts(g):
    """sluice-bench's answer counts over the runs of a row: (acked, refused full, refused
    busy, other errors, time-outs) in requests, or None when its notes have none."""
    m = [ANSWERS.search(r.get("note", "")) for r in g.rows]
    if not any(m):
        return None
    return tuple(sum(int(x.group(i)) for x in m if x) for i in (1, 2, 3, 4, 5))


def errors_cell(g):
    """Errors over the runs; for sluice, how the refused requests were answered."""
    e = sum(r["errors"] for r in g.rows)
    c = answer_counts(g)
    if c is None:
        return str(e)
    _, full, busy, other, tmo = c
    if full + busy + other + tmo == 0:
        return str(e)
    cell = f"{e} (requests: full {full}, busy {busy}, other {other}, time-outs {tmo})"
    return cell + (" !!! TIME-OUTS" if tmo else "")


def refusal_mark(*groups):
    """For a ratio cell: the requests of these rows refused (SL_E_FULL or busy, answered at
    once) over their runs, when any were; their rates count the acked messages only, so
    such a ratio does not measure the same work on both sides."""
    out = []
    for g in groups:
        c = answer_counts(g) if g is not None else None
        if c is not None and c[1] + c[2] > 0:
            out.append(f"{g['system']} {g['workload']}: {c[1] + c[2]:,} of {sum(c):,} "
                       "requests refused")
    return (" !! " + "; ".join(out) + " (rates of acked messages only)") if out else ""


def key(r):
    note = base_note(r) if r["system"] == "sluice-udp" else ""
    return (r["system"], r["workload"], r["mode"], r["transport"], r["batch"],
            r["durability"], r["rf"], r["msg_size"], r["window"], r["producers"], note)


class Group:
    """The runs of one row: median (by acked msg/s), min, max."""

    def __init__(self, rows):
        self.rows = sorted(rows, key=lambda r: r["acked_per_s"])
        self.r = self.rows[(len(self.rows) - 1) // 2]      # the median run (lower of two)

    def rate(self):
        v = [r["acked_per_s"] for r in self.rows]
        return statistics.median(v)

    def span(self):
        return self.rows[0]["acked_per_s"], self.rows[-1]["acked_per_s"]

    def cpu(self, field):
        v = [r.get(field, -1) for r in self.rows if r.get(field, -1) is not None and
             r.get(field, -1) >= 0]
        return statistics.median(v) if v else -1

    def shared(self):
        return any(r.get("shared_cores") for r in self.rows)

    def __getitem__(self, k):
        return base_note(self.r) if k == "note" else self.r[k]

    def get(self, k, d=None):
        return base_note(self.r) if k == "note" else self.r.get(k, d)


def groups(rows):
    g = {}
    for r in rows:
        g.setdefault(key(r), []).append(r)
    return [Group(v) for v in g.values()]


def rate_cell(g):
    lo, hi = g.span()
    if len(g.rows) == 1:
        return fmt_rate(g.rate())
    return f"{fmt_rate(g.rate())} ({fmt_rate(lo)}-{fmt_rate(hi)}, {len(g.rows)} runs)"


def short_note(g):
    n = base_note(g.r)
    return n if g["system"].startswith("sluice") and len(n) < 60 else ""


def table(gs):
    print("Every row: median of its runs (min-max, runs). Whole-process CPU: the broker "
          "process's utime + stime over the measured phase per acked message (sluiced: "
          "every thread, busy polling included; peers: the server process). Worker busy "
          "cycles: sluice's own figure, cycles of poll-loop iterations that did work: NOT "
          "comparable with whole-process CPU, never ratioed with it.")
    print()
    print("| system | workload | mode | transport | batch | durability | RF | size | window "
          "| producers | acked msg/s | p50 us | p99 us | p99.9 us | errors "
          "| whole-process CPU ns/msg | worker busy-cycle ns/msg | shared core | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for g in gs:
        mode = g["mode"] + (f" @{fmt_rate(g['offered_per_s'])}/s" if g["mode"] == "open"
                            else "")
        ack = "" if g.get("ack", "yes") == "yes" else " (no ack)"
        print(f"| {g['system']}{ack} | {g['workload']} | {mode} | {g['transport']} "
              f"| {g['batch']} | {g['durability']} | {g['rf']} | {g['msg_size']} "
              f"| {g['window']} | {g['producers']} | {rate_cell(g)} "
              f"| {g['p50_us']:.1f} | {g['p99_us']:.1f} | {g['p999_us']:.1f} "
              f"| {errors_cell(g)} | {fmt_cpu(g.cpu('proc_cpu_ns_per_msg'))} "
              f"| {fmt_cpu(g.cpu('cpu_ns_per_msg'))} | {'YES' if g.shared() else 'no'} "
              f"| {short_note(g)} |")


def placement(gs):
    seen = set()
    out = []
    for g in gs:
        p = g.get("placement")
        if not p:
            continue
        k = (g["system"], g["transport"], g["durability"], p)
        if k in seen:
            continue
        seen.add(k)
        oth = statistics.median([r.get("others_cores", 0) for r in g.rows])
        out.append(f"| {g['system']} | {g['transport']} | {g['durability']} | {p} "
                   f"| {'YES' if g.shared() else 'no'} | {oth:.2f} |")
    if not out:
        return
    print()
    print("Core layout (placement.py: label/thread@allowed CPUs and CPU use of the busy "
          "threads and of every pinned thread; shared: a busy thread shared a core with "
          "another busy thread; others: cores used by processes this run did not start):")
    print()
    print("| system | transport | durability | threads@cores | shared | others (cores) |")
    print("|---|---|---|---|---|---|")
    for line in out:
        print(line)


def disk_figures(r):
    """The key=value words sluice-disk-bench puts before the ';' of its note."""
    words = r.get("note", "").split(";")[0].split()
    return {k: float(v) for k, v in (w.split("=", 1) for w in words if "=" in w)}


def storage(rows):
    disk = [r for r in rows if r["system"] in STORAGE]
    if not disk:
        return
    print()
    print("Storage append (sluice-disk-bench; latency per write call with its sync; vs raw: "
          "the disk log's msg/s over the raw disk's under the same sync policy):")
    print()
    print("| system | workload | sync | size | batch | msg/s | disk MB/s | syncs/s | p50 us "
          "| p99 us | CPU ns/msg | vs raw |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in disk:
        f = disk_figures(r)
        vs = f"{f.get('vs_raw', 0):.2f}" if r["system"] == "disklog" else "-"
        print(f"| {r['system']} | {r['workload']} | {r['mode']} | {r['msg_size']} "
              f"| {r['batch']} | {fmt_rate(r['acked_per_s'])} "
              f"| {f.get('disk_mb_per_s', 0):.1f} | {f.get('syncs_per_s', 0):.0f} "
              f"| {r['p50_us']:.1f} | {r['p99_us']:.1f} | {r['cpu_ns_per_msg']:.0f} | {vs} |")
    for r in disk:
        if r["system"] == "disklog" and r["mode"] == "always":
            q = disk_figures(r).get("vs_raw", 0)
            print(f"\ndisk log {r['workload'].upper()} x{r['batch']}, sync always: "
                  f"{q:.2f} of raw (target >= {STORAGE_TARGET:.2f}: "
                  f"{'met' if q >= STORAGE_TARGET else 'not met'})")


def cond_text(g, fields=CONDS):
    return ", ".join(f"{k}={g[k]}" for k in fields)


def peer_ratios(gs):
    """sluice's PUB and MPUB rows against the peers' rows equal on every condition."""
    mine = [g for g in gs if g["system"] in SLUICE and g["workload"] in ("pub", "mpub")
            and g["mode"] == "closed"]
    peers = [g for g in gs if g["system"] in PEERS and g["workload"] == "pub"
             and g["mode"] == "closed" and g.get("ack", "yes") == "yes"]
    if not mine or not peers:
        return
    titles = {
        "memif": "sluice with a kernel-bypass client (DPDK over net_memif, shared memory) "
                 "against the peers' best local path (TCP loopback)",
        "udp-xdp": "sluice with a client on ordinary kernel UDP sockets (sluiced on net_af_xdp "
                   "over a veth pair) against the peers' clients on kernel TCP sockets "
                   "(loopback)",
        "udp-tap": "sluice with a client on ordinary kernel UDP sockets (sluiced on net_tap) "
                   "against the peers' clients on kernel TCP sockets (loopback)",
    }
    unmatched = []
    for tr, title in titles.items():
        lines = []
        for g in mine:
            if g["transport"] != tr:
                continue
            hit = [p for p in peers if all(p[k] == g[k] for k in CONDS)]
            if not hit:
                unmatched.append(g)
            for p in hit:
                q = g.rate() / p.rate() if p.rate() > 0 else 0
                c1, c2 = g.cpu("proc_cpu_ns_per_msg"), p.cpu("proc_cpu_ns_per_msg")
                cq = f"{c1 / c2:.2f}" if c1 > 0 and c2 > 0 else "-"
                part = f" ({g['note']})" if g["system"] == "sluice-udp" else ""
                lines.append(f"| {g['system']} {g['workload']}{part} | {p['system']} pub "
                             f"| {cond_text(g)} | {fmt_rate(g.rate())} | {fmt_rate(p.rate())} "
                             f"| **{q:.2f}**{refusal_mark(g)} | {fmt_cpu(c1)} / {fmt_cpu(c2)} "
                             f"| {cq} "
                             f"| {'YES' if g.shared() or p.shared() else 'no'} |")
        if not lines:
            continue
        print()
        print(f"{title}: sluice over {tr}, peers over tcp-loopback; every pair equal on "
              f"{', '.join(CONDS)} (matched: column 3). Ratio: sluice's median over the "
              "peer's. CPU: whole-process ns/msg of both brokers.")
        print()
        print("| sluice row | peer row | matched | sluice acked/s | peer acked/s | ratio "
              "| whole-process CPU ns/msg sluice / peer | CPU ratio | shared core |")
        print("|---|---|---|---|---|---|---|---|---|")
        for line in lines:
            print(line)
    lonely = [p for p in peers if not any(all(p[k] == g[k] for k in CONDS) for g in mine)]
    if unmatched or lonely:
        print()
        print("Rows with no like-for-like partner (no ratio printed):")
        for g in unmatched:
            print(f"- {g['system']} {g['workload']} over {g['transport']} ({cond_text(g)}): "
                  "no peer row with these conditions")
        for p in lonely:
            print(f"- {p['system']} pub over tcp-loopback ({cond_text(p)}): no sluice row "
                  "with these conditions")


def find(gs, **kw):
    out = [g for g in gs if all(g.get(k) == v for k, v in kw.items())]
    return out[0] if out else None


def own_ratios(gs):
    """sluice against its ceiling and against itself: one condition varies, named."""
    lines = []

    def line(name, a, b, matched, varies, q, target="-", ok=None, mark=""):
        met = "-" if ok is None else ("yes" if ok else "no")
        lines.append(f"| {name} | {a} | {b} | {matched} | {varies} | **{q}**{mark} | {target} "
                     f"| {met} |")

    def pair(name, ga, gb, varies, target=None, field="rate"):
        if ga is None or gb is None:
            return
        if field == "rate":
            if gb.rate() <= 0:
                return
            q = ga.rate() / gb.rate()
            a, b = fmt_rate(ga.rate()), fmt_rate(gb.rate())
        else:
            if gb[field] <= 0:
                return
            q = ga[field] / gb[field]
            a, b = f"{ga[field]:.1f}", f"{gb[field]:.1f}"
        fields = ["transport"] + [k for k in CONDS if ga[k] == gb[k]]
        ok = None
        t = "-"
        if target:
            t = target
            ok = eval(f"{q} {target}")
        line(name, a, b, ", ".join(fields), varies, f"{q:.2f}", t, ok, refusal_mark(ga, gb))

    S = dict(msg_size=100, mode="closed")
    pair("PUB acked/s: sluice / reflector (memif)", find(gs, system="sluice", workload="pub",
         **S), find(gs, system="reflector", workload="reflect", batch=1, **S),
         "broker vs bare round trip", ">= 0.5")
    pair("MPUB of 32 msg/s: sluice / reflector with MPUB-sized frames",
         find(gs, system="sluice", workload="mpub", **S),
         find(gs, system="reflector", workload="reflect", batch=32, **S),
         "broker vs bare round trip")
    pair("PUB acked/s: sluice / reflector (kernel UDP, same port)",
         find(gs, system="sluice-udp", workload="pub", producers=1,
              note="topic of 1 partition(s), 1 worker", **S),
         find(gs, system="reflector-udp", workload="reflect", **S), "broker vs bare round trip")
    pair("PUB acked/s: sluice one datagram per PUB / reflector (kernel UDP, same port)",
         find(gs, system="sluice-udp", workload="pub", producers=1,
              note=NOBUNDLE_NOTE, **S),
         find(gs, system="reflector-udp", workload="reflect", **S), "broker vs bare round trip")
    for wl, name in (("pub", "PUB"), ("mpub", "MPUB of 32")):
        mem = find(gs, system="sluice", workload=wl, **S)
        for sysn, dur in (("sluice-pc", "page-cache"), ("sluice-disk", "fsync")):
            pair(f"{name} acked/s: durability {dur} / none (memif)",
                 find(gs, system=sysn, workload=wl, **S), mem, "durability")
    rf1 = find(gs, system="sluice-rf1", workload="pub")
    rf3 = find(gs, system="sluice-rf3", workload="pub")
    pair("PUB acked/s: RF=3 / RF=1 (kernel UDP via net_tap, same nodes and cores)", rf3, rf1,
         "replication factor", ">= 0.5")
    pair("PUB p99 us: RF=3 / RF=1", rf3, rf1, "replication factor", field="p99_us")
    pair("PUB acked/s: RF=3 / RF=1 (memif, same nodes and cores)",
         find(gs, system="sluice-rf3-memif", workload="pub"),
         find(gs, system="sluice-rf1-memif", workload="pub"), "replication factor", ">= 0.5")
    pair("PUB acked/s, RF=3: replica MAC / --insecure-cluster", rf3,
         find(gs, system="sluice-rf3-nomac", workload="pub"), "replica MAC", ">= 0.9")
    pair("open loop at half the PUB peak, p99 us: sluice / reflector",
         find(gs, system="sluice", workload="pub", mode="open"),
         find(gs, system="reflector", workload="reflect", mode="open"), "broker vs bare",
         "<= 5", field="p99_us")
    if not lines:
        return
    print()
    print("sluice against its own ceiling and against itself (same transport and conditions "
          "but the one that varies):")
    print()
    print("| figure | sluice | compared with | matched | varies | ratio | target | met |")
    print("|---|---|---|---|---|---|---|---|")
    for line_ in lines:
        print(line_)
    rf_estimate(rf1, rf3)
    rf_estimate(find(gs, system="sluice-rf1-memif", workload="pub"),
                find(gs, system="sluice-rf3-memif", workload="pub"), "memif",
                "a chain of adaptive-sleep wake-ups per batch (client, leader, followers, "
                "leader) on two shared CPUs")


def rf_estimate(rf1, rf3, path="net_tap", bound="the tap's system call per frame"):
    """What three machines would give: from the per-message CPU of leader and followers."""
    if rf3 is None:
        return
    nodes = rf3.get("node_cpu") or {}
    lead, fol = nodes.get("node1", {}), [nodes.get(n, {}) for n in ("node2", "node3")]
    what = None
    for field, text in (("busy_ns_per_msg", "worker busy-cycle ns (over the RF=3 run, warm-up "
                         "included)"),
                        ("proc_ns_per_msg", "whole-process CPU ns (over the measured phase; "
                         "the workers' busy cycles could not be read)")):
        lv = lead.get(field)
        fv = [f.get(field) for f in fol if f.get(field)]
        if lv and fv:
            what = (lv, sum(fv) / len(fv), text)
            break
    if what is None:
        return
    lb, fbm, text = what
    est = 1e9 / max(lb, fbm)
    print()
    print(f"Replication on three machines ({path}), an ESTIMATE derived from this run (not "
          f"measured): per replicated PUB the leader spent {lb:.0f} and each follower {fbm:.0f} {text}. "
          "With each node on a core of its own, the busier side bounds the rate at about "
          f"{fmt_rate(est)} msg/s per partition (1e9 / max(leader, follower)); the measured "
          f"RF=3 rate here is {fmt_rate(rf3.rate())}"
          + (f" and RF=1 {fmt_rate(rf1.rate())}" if rf1 else "") +
          f", bounded by the shared cores and {bound}. The estimate "
          "leaves out the network between machines and assumes the client is not the limit.")


def ratios(gs):
    peer_ratios(gs)
    own_ratios(gs)


def gnuplot(d, dat_name, png, size, series, style, settings):
    """Write series {title: [(x, y), ...]} as gnuplot data blocks and plot them to d/png."""
    dat = os.path.join(d, dat_name)
    with open(dat, "w") as f:
        for name, pts in series.items():
            f.write(f"# {name}\n")
            for pt in pts:
                # None: a break in the line (one blank line: the next run's curve)
                f.write("\n" if pt is None else f"{pt[0]} {pt[1]}\n")
            f.write("\n\n")
    plot = ", ".join(f"'{dat}' index {i} with {style} title '{n}'"
                     for i, n in enumerate(series))
    script = (f"set terminal png size {size}; set output '{d}/{png}';" + settings +
              f"plot {plot}")
    subprocess.run(["gnuplot", "-e", script], check=True)


def plots(d, rows):
    if shutil.which("gnuplot") is None:
        print("\n(gnuplot not found: no plots)")
        return
    made = []
    pts = {}
    for r in rows:
        if r["mode"] != "closed" or r["batch"] != 1:
            continue
        if (r["system"], r["workload"]) in (("sluice", "pub"), ("reflector", "reflect")):
            pts.setdefault(r["system"], {}).setdefault(r["msg_size"], []).append(
                r["acked_per_s"] / 1e6)
    if any(len(v) > 1 for v in pts.values()):
        # the median of each size's runs, as in the tables
        series = {n: [(size, statistics.median(v[size])) for size in sorted(v)]
                  for n, v in pts.items()}
        gnuplot(d, "size.dat", "throughput-size.png", "800,500", series, "linespoints",
                "set title 'Closed loop, window 32: messages/s against message size';"
                "set xlabel 'message bytes'; set ylabel 'million messages/s';"
                "set logscale x 2; set grid; set key top right;")
        made.append("throughput-size.png")
    cdf = os.path.join(d, "cdf.dat")
    if os.path.exists(cdf):
        series = {}
        with open(cdf) as f:
            for line in f:
                p = line.split()
                # the size sweep's other sizes, the kernel-UDP runs and the peers' runs
                # with several producers (label part "-Np") would crowd the plot: 100-byte
                # DPDK and single-producer peer runs only
                if len(p) == 3 and not p[0].startswith("sluice-udp") and not any(
                        (x.endswith("B") and x[:-1].isdigit() and x != "100B") or
                        (x.endswith("p") and x[:-1].isdigit()) for x in p[0].split("-")):
                    pts = series.setdefault(p[0], [])
                    x, y = float(p[1]), float(p[2])
                    # a fraction below the last one: the next run of the same row
                    if pts and pts[-1] is not None and y < pts[-1][1]:
                        pts.append(None)
                    pts.append((x, y))
        if series:
            gnuplot(d, "cdf-plot.dat", "latency-cdf.png", "900,560",
                    {n: series[n] for n in sorted(series)}, "lines",
                    "set title 'Latency CDF (per request; pubsub: publish to delivery)';"
                    "set xlabel 'latency, microseconds'; set ylabel 'fraction';"
                    "set logscale x; set grid; set key bottom right;")
            made.append("latency-cdf.png")
    if made:
        print("\nplots: " + ", ".join(os.path.join(d, m) for m in made))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    rows = load(os.path.join(d, "results.jsonl"))
    if not rows:
        print("no results", file=sys.stderr)
        return 1
    gs = groups([r for r in rows if r["system"] not in STORAGE])
    table(gs)
    ratios(gs)
    placement(gs)
    storage(rows)
    plots(d, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
