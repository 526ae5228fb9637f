#!/usr/bin/env python3
"""Chart for the bandit's simulator: plot_bandit.py DIR [OUT] reads
DIR/regret.csv (written by akts_bandit_regret) and writes OUT (default
DIR/bandit_regret.png): per scenario (stationary, change), the cumulative
regret against the best fixed arm per seed, and the arm that ran over time
for one seed."""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

d = sys.argv[1] if len(sys.argv) > 1 else "."
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(d, "bandit_regret.png")

# runs[scenario][seed] = {"step": [...], "arm": [...], "fixed": [...], "oracle": [...]}
runs = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
with open(os.path.join(d, "regret.csv")) as f:
    for row in csv.DictReader(f):
        r = runs[row["scenario"]][int(row["seed"])]
        r["step"].append(int(row["step"]))
        r["arm"].append(int(row["arm"]))
        r["fixed"].append(float(row["regret_vs_best_fixed"]))
        r["oracle"].append(float(row["regret_vs_dynamic_oracle"]))

scenarios = [s for s in ("stationary", "change") if s in runs] + [s for s in runs if s not in ("stationary", "change")]
fig, axes = plt.subplots(2, len(scenarios), figsize=(6 * len(scenarios), 7), squeeze=False,
                         gridspec_kw={"height_ratios": [3, 1]})
for col, name in enumerate(scenarios):
    top, bottom = axes[0][col], axes[1][col]
    seeds = sorted(runs[name])
    for i, seed in enumerate(seeds):
        r = runs[name][seed]
        color = f"C{i}"
        top.plot(r["step"], r["fixed"], color=color, label=f"seed {seed}")
        if name != "stationary":
            top.plot(r["step"], r["oracle"], color=color, linestyle="--", linewidth=0.8)
    top.set_title(f"{name}: cumulative regret" + (" (solid: vs best fixed arm, dashed: vs per-phase best)"
                                                  if name != "stationary" else " vs the best fixed arm"),
                  fontsize=9)
    top.set_ylabel("pseudo-regret (expected reward lost)")
    top.axhline(0, color="grey", linewidth=0.5)
    top.legend(fontsize=7)
    r = runs[name][seeds[0]]
    bottom.scatter(r["step"], r["arm"], s=1, color="black")
    bottom.set_yticks(sorted(set(r["arm"])))
    bottom.set_ylabel("arm that ran")
    bottom.set_xlabel(f"step (window); arm shown for seed {seeds[0]}")
    if name == "change":
        for ax in (top, bottom):
            ax.axvline(len(r["step"]) / 2, color="red", linewidth=0.8, linestyle=":")
fig.suptitle("akts bandit (discounted LinUCB) in its simulator: best arm 0.1 above the others, noise sd 0.2",
             fontsize=11)
fig.tight_layout()
fig.savefig(out, dpi=110)
