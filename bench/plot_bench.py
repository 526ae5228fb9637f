#!/usr/bin/env python3
"""Charts for `akts bench`: plot_bench.py DIR reads DIR/actuation.json (and
DIR/actuation-host.json, DIR/dispatch.json when present) and writes
DIR/actuation.png and DIR/dispatch.png."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

d = sys.argv[1]


def load(name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


def actuation_chart(reports):
    fig, ax = plt.subplots(figsize=(11, 5))
    labels, p50, p99, colors = [], [], [], []
    for tag, rep, color in reports:
        for a in rep["arms"]:
            if "summary" not in a:
                continue
            labels.append(f"{a['label']}\n[{tag}]")
            p50.append(a["summary"]["p50_ns"])
            p99.append(a["summary"]["p99_ns"])
            colors.append(color)
    y = range(len(labels))
    ax.barh(y, p50, color=colors, log=True)
    ax.errorbar(p99, y, fmt="|", color="black", markersize=10, label="p99")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time to apply a change, ns (log scale); bar = p50, tick = p99")
    ax.set_title("akts bench actuation: every way to change a scheduler, one run each")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "actuation.png"), dpi=110)


def dispatch_chart(rep):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    se = rep["switch_to_effect"]
    if "skipped" not in se:
        modes = ["store", "kick"]
        first = [se[m]["until_first_cpu"]["p50_ns"] / 1e3 for m in modes]
        every = [se[m]["until_every_cpu"]["p50_ns"] / 1e3 for m in modes]
        x = range(len(modes))
        a1.bar([i - 0.2 for i in x], first, width=0.4, label="first CPU (p50)")
        a1.bar([i + 0.2 for i in x], every, width=0.4, label="every CPU (p50)")
        a1.set_xticks(list(x))
        a1.set_xticklabels(["plain store", "kicking switch"])
        a1.set_ylabel("us from the switch to the new policy running")
        a1.set_title("switch-to-effect, CPUs busy on 20 ms slices", fontsize=10)
        a1.legend()
    pe = rep["per_event_cost"]
    if "skipped" not in pe:
        cbs = list(next(iter(pe["configs"].values()))["per_callback"].keys())
        keys = list(pe["configs"].keys())
        w = 0.8 / len(keys)
        for i, k in enumerate(keys):
            vals = [pe["configs"][k]["per_callback"][cb]["ns_per_event"] / 1e3 for cb in cbs]
            a2.bar([j + i * w for j in range(len(cbs))], vals, width=w, label=pe["configs"][k]["label"])
        a2.set_xticks([j + 0.4 - w / 2 for j in range(len(cbs))])
        a2.set_xticklabels(cbs, rotation=30, fontsize=8)
        a2.set_ylabel("us per invocation (bpf_stats)")
        a2.set_title("per-event cost: dispatcher vs stand-alone policy", fontsize=10)
        a2.legend(fontsize=7)
    fig.suptitle(f"akts bench dispatch ({rep['environment']})", fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "dispatch.png"), dpi=110)


reports = []
guest = load("actuation.json")
host = load("actuation-host.json")
if guest:
    reports.append(("TCG guest", guest, "tab:orange"))
if host:
    reports.append(("host", host, "tab:blue"))
if reports:
    actuation_chart(reports)
disp = load("dispatch.json")
if disp:
    dispatch_chart(disp)
