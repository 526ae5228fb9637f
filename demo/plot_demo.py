#!/usr/bin/env python3
"""Draws the demo's per-phase results (demo.json) as a PNG: LC wait, LC wake-up
latency and batch CPU time, one group of bars per phase, labelled by policy."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = json.load(open(sys.argv[1]))
labels = [f"{r['phase']}: {r['policy']}" for r in rows]
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
panels = [
    ("LC wait p99 (ms, kernel histogram)", [(r["lc_wait_p99_ns"] or 0) / 1e6 for r in rows], "tab:red"),
    ("cyclictest max wake-up latency (ms)", [(r["cyclictest_max_us"] or 0) / 1e3 for r in rows], "tab:orange"),
    ("batch CPU time in the phase (s)", [r["be_cpu_seconds"] for r in rows], "tab:blue"),
]
for ax, (title, values, color) in zip(axes, panels):
    ax.bar(range(len(rows)), values, color=color)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=25, ha="right", fontsize=8)
    ax.set_title(title, fontsize=10)
fig.suptitle("akts demo: one run, the policy switched between phases (emulated TCG guest figures)", fontsize=11)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
