#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
"""Summarise a tools/bench/run result directory: a markdown table of every result, the
ratios to the ceiling and to the peers measured in the same run (issue 3 targets), the
storage table (sluice-disk-bench: the disk log against the raw disk, per sync policy), and
PNG plots drawn by gnuplot (throughput against message size, latency CDFs).

usage: summarize.py DIR      (DIR holds results.jsonl and cdf.dat)
"""
import json
import os
import shutil
import subprocess
import sys


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def pick(rows, **kw):
    out = [r for r in rows if all(r.get(k) == v for k, v in kw.items())]
    return out[-1] if out else None


def fmt_rate(x):
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.1f} k"


def short_note(r):
    """The note of sluice's own runs (the peers' notes are long; they stay in the JSON)."""
    n = r.get("note", "")
    return n if r["system"].startswith("sluice") and len(n) < 60 else ""


def table(rows):
    print("| system | workload | mode | size | batch | window | producers | acked msg/s "
          "| MB/s | p50 us | p99 us | p99.9 us | errors | broker CPU ns/msg | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cpu = f"{r['cpu_ns_per_msg']:.0f}" if r["cpu_ns_per_msg"] >= 0 else "-"
        mode = r["mode"] + (f" @{fmt_rate(r['offered_per_s'])}/s" if r["mode"] == "open"
                            else "")
        print(f"| {r['system']} | {r['workload']} | {mode} | {r['msg_size']} | {r['batch']} "
              f"| {r['window']} | {r.get('producers', 1)} | {fmt_rate(r['acked_per_s'])} "
              f"| {r['mb_per_s']:.1f} "
              f"| {r['p50_us']:.1f} | {r['p99_us']:.1f} | {r['p999_us']:.1f} "
              f"| {r['errors']} | {cpu} | {short_note(r)} |")


STORAGE = ("disk-raw", "disklog")
STORAGE_TARGET = 0.80


def disk_figures(r):
    """The key=value words sluice-disk-bench puts before the ';' of its note."""
    words = r.get("note", "").split(";")[0].split()
    return {k: float(v) for k, v in (w.split("=", 1) for w in words if "=" in w)}


def disk_pairs(rows):
    """(disklog row, disk-raw row with the same workload, sync policy, size and batch)."""
    for r in rows:
        if r["system"] == "disklog":
            raw = pick(rows, system="disk-raw", workload=r["workload"], mode=r["mode"],
                       msg_size=r["msg_size"], batch=r["batch"])
            if raw and raw["acked_per_s"] > 0:
                yield r, raw


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


def ratios(rows):
    print()
    print("| figure | sluice | compared with | ratio | target | met |")
    print("|---|---|---|---|---|---|")

    def line(name, a, b, what, ratio, target, ok):
        met = "-" if ok is None else ("yes" if ok else "no")
        print(f"| {name} | {a} | {b} ({what}) | {ratio} | {target} | {met} |")

    pub = pick(rows, system="sluice", workload="pub", mode="closed", msg_size=100)
    refl = pick(rows, system="reflector", workload="reflect", mode="closed", msg_size=100,
                batch=1)
    if pub and refl and refl["acked_per_s"] > 0:
        q = pub["acked_per_s"] / refl["acked_per_s"]
        line("PUB closed loop, acked/s", fmt_rate(pub["acked_per_s"]),
             fmt_rate(refl["acked_per_s"]), "reflector round trips", f"{q:.2f}", ">= 0.50",
             q >= 0.5)
    mpub = pick(rows, system="sluice", workload="mpub", msg_size=100)
    peers = [r for r in rows if r["system"] in ("jetstream", "redis")
             and r["workload"] == "pub" and r["msg_size"] == 100]
    if mpub and peers:
        best = max(peers, key=lambda r: r["acked_per_s"])
        if best["acked_per_s"] > 0:
            q = mpub["acked_per_s"] / best["acked_per_s"]
            line("MPUB of 32, acked msg/s", fmt_rate(mpub["acked_per_s"]),
                 fmt_rate(best["acked_per_s"]), f"best acked peer: {best['system']}",
                 f"{q:.1f}", ">= 10", q >= 10)
    mrefl = pick(rows, system="reflector", workload="reflect", mode="closed", batch=32)
    if mpub and mrefl and mrefl["acked_per_s"] > 0:
        q = mpub["acked_per_s"] / mrefl["acked_per_s"]
        line("MPUB of 32, msg/s", fmt_rate(mpub["acked_per_s"]),
             fmt_rate(mrefl["acked_per_s"]), "reflector, MPUB-sized frames", f"{q:.2f}",
             "-", None)
    upub = pick(rows, system="sluice-udp", workload="pub", mode="closed", producers=1)
    urefl = pick(rows, system="reflector-udp", workload="reflect", mode="closed")
    if upub and urefl and urefl["acked_per_s"] > 0:
        q = upub["acked_per_s"] / urefl["acked_per_s"]
        line("kernel UDP (tap) PUB, acked/s", fmt_rate(upub["acked_per_s"]),
             fmt_rate(urefl["acked_per_s"]), "reflector on the same tap port", f"{q:.2f}",
             "-", None)
    for wl, name in (("pub", "PUB"), ("mpub", "MPUB of 32")):
        dpub = pick(rows, system="sluice-disk", workload=wl, msg_size=100)
        mem = pick(rows, system="sluice", workload=wl, mode="closed", msg_size=100)
        if dpub and mem and mem["acked_per_s"] > 0:
            q = dpub["acked_per_s"] / mem["acked_per_s"]
            line(f"{name}, durability disk, acked/s", fmt_rate(dpub["acked_per_s"]),
                 fmt_rate(mem["acked_per_s"]), "durability memory, same node", f"{q:.2f}",
                 "-", None)
            if mem["p99_us"] > 0:
                line(f"{name}, durability disk, p99 us", f"{dpub['p99_us']:.1f}",
                     f"{mem['p99_us']:.1f}", "durability memory", "-", "-", None)
    rf1 = pick(rows, system="sluice-rf1", workload="pub")
    rf3 = pick(rows, system="sluice-rf3", workload="pub")
    if rf1 and rf3 and rf1["acked_per_s"] > 0:
        q = rf3["acked_per_s"] / rf1["acked_per_s"]
        line("replication factor 3, acked/s", fmt_rate(rf3["acked_per_s"]),
             fmt_rate(rf1["acked_per_s"]), "replication factor 1, same nodes", f"{q:.2f}",
             ">= 0.5", q >= 0.5)
        line("replication factor 3, p99 us", f"{rf3['p99_us']:.1f}", f"{rf1['p99_us']:.1f}",
             "replication factor 1", "-", "-", None)
    rf3n = pick(rows, system="sluice-rf3-nomac", workload="pub")
    if rf3 and rf3n and rf3n["acked_per_s"] > 0:
        q = rf3["acked_per_s"] / rf3n["acked_per_s"]
        line("replication factor 3 with the replica MAC, acked/s", fmt_rate(rf3["acked_per_s"]),
             fmt_rate(rf3n["acked_per_s"]),
             "replication factor 3 without it (--insecure-cluster), same nodes, kernel UDP, "
             "PUB of 1", f"{q:.2f}", ">= 0.9", q >= 0.9)
    opn = pick(rows, system="sluice", workload="pub", mode="open")
    ropn = pick(rows, system="reflector", workload="reflect", mode="open")
    if opn and ropn and ropn["p99_us"] > 0:
        q = opn["p99_us"] / ropn["p99_us"]
        line("open loop at half the peak, p99 us", f"{opn['p99_us']:.1f}",
             f"{ropn['p99_us']:.1f}", "reflector, same rate", f"{q:.2f}", "<= 5", q <= 5)
    for r in peers + [x for x in rows if x["system"] == "nats-core" and x["workload"] == "pub"]:
        if pub and r["acked_per_s"] > 0:
            q = pub["acked_per_s"] / r["acked_per_s"]
            line("PUB closed loop, acked/s", fmt_rate(pub["acked_per_s"]),
                 fmt_rate(r["acked_per_s"]), f"{r['system']} {r['workload']}", f"{q:.1f}",
                 "-", None)
    for d, raw in disk_pairs(rows):
        q = d["acked_per_s"] / raw["acked_per_s"]
        always = d["mode"] == "always"
        line(f"disk log {d['workload'].upper()} x{d['batch']}, sync {d['mode']}, msg/s",
             fmt_rate(d["acked_per_s"]), fmt_rate(raw["acked_per_s"]),
             "raw pwrite, same bytes, no sync" if d["mode"] == "none" else
             "raw pwrite + fdatasync, same bytes and sync spacing", f"{q:.2f}",
             f">= {STORAGE_TARGET:.2f}" if always else "-",
             q >= STORAGE_TARGET if always else None)


def gnuplot(d, dat_name, png, size, series, style, settings):
    """Write series {title: [(x, y), ...]} as gnuplot data blocks and plot them to d/png."""
    dat = os.path.join(d, dat_name)
    with open(dat, "w") as f:
        for name, pts in series.items():
            f.write(f"# {name}\n")
            for x, y in pts:
                f.write(f"{x} {y}\n")
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
            pts.setdefault(r["system"], {})[r["msg_size"]] = r["acked_per_s"] / 1e6
    if any(len(v) > 1 for v in pts.values()):
        series = {n: [(size, v[size]) for size in sorted(v)] for n, v in pts.items()}
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
                # the size sweep's other sizes and the kernel-UDP producer runs would
                # crowd the plot: 100-byte DPDK and peer runs only
                if len(p) == 3 and not p[0].startswith("sluice-udp") and not any(
                        x.endswith("B") and x[:-1].isdigit() and
                                           x != "100B" for x in p[0].split("-")):
                    series.setdefault(p[0], []).append((float(p[1]), float(p[2])))
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
    table([r for r in rows if r["system"] not in STORAGE])
    ratios(rows)
    storage(rows)
    plots(d, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
