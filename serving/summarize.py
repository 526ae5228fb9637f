#!/usr/bin/env python3
"""Summarises a serving experiment's directory (serving/experiment.sh): per
arm, over runs, burst TTFT p50/p99, steady TTFT p99, burst requests served,
batch CPU seconds and controller switches, as a table (mean ± std)."""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
rows = defaultdict(lambda: defaultdict(list))
order = []
for arm_file in sorted(glob.glob(os.path.join(out, "*", "arm.json"))):
    d = os.path.dirname(arm_file)
    arm = json.load(open(arm_file))
    try:
        load = json.load(open(os.path.join(d, "load.json")))
    except (OSError, ValueError):
        continue
    name = arm["arm"]
    if name not in order:
        order.append(name)
    phases = load["phases"]
    burst = [p for p in phases if p["name"] == "burst"]
    steady = [p for p in phases if p["name"] == "steady"]
    r = rows[name]
    if burst:
        r["burst_ttft_p50"].append(burst[0]["median_ttft_ms"])
        r["burst_ttft_p99"].append(burst[0]["p99_ttft_ms"])
        r["burst_served"].append(burst[0]["completed"])
    if steady:
        r["steady_ttft_p99"].append(max(p["p99_ttft_ms"] for p in steady))
    r["batch_cpu_s"].append(arm["batch_cpu_s"])
    r["switches"].append(arm["decisions_applied"])

def fmt(v):
    if not v:
        return "-"
    m = statistics.mean(v)
    s = statistics.pstdev(v) if len(v) > 1 else 0
    return "%.0f±%.0f" % (m, s) if m >= 10 else "%.1f±%.1f" % (m, s)

cols = ["burst_ttft_p50", "burst_ttft_p99", "steady_ttft_p99", "burst_served", "batch_cpu_s", "switches"]
print("%-11s " % "arm" + " ".join("%16s" % c for c in cols))
for a in order:
    print("%-11s " % a + " ".join("%16s" % fmt(rows[a][c]) for c in cols))
json.dump({a: {c: rows[a][c] for c in cols} for a in order}, open(os.path.join(out, "summary.json"), "w"), indent=2)
