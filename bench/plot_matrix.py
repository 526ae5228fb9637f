#!/usr/bin/env python3
"""The policy x workload matrix's report: plot_matrix.py DIR [DIR...] [--json].

Each DIR is one run of bench/matrix.sh (its meta.json says how many CPUs it had). Writes, into the first
DIR's parent: matrix.json (every row's figures), matrix.md (the table) and matrix.png (a heatmap: each
cell's colour is how much better or worse than the default scheduler's row in the same run, on a log2
scale; the figure itself is written in the cell), plus matrix_bimodal.png (p99.9 slowdown against offered
load, one line per row). Prints the table, or the JSON with --json. All figures are from a QEMU TCG guest:
compare rows within a run, not with native hardware."""
import json
import math
import os
import sys

# (key, label, unit, better, workload): the matrix's columns.
COLUMNS = [
    ("hackbench_s", "hackbench", "s", "lower", "hackbench"),
    ("cyclictest_max_us", "cyclictest\nmax", "us", "lower", "cyclictest"),
    ("cyclictest_avg_us", "cyclictest\navg", "us", "lower", "cyclictest"),
    ("cyclictest_be_ops", "stress-ng\nbeside it", "bogo/s", "higher", "cyclictest"),
    ("sysbench_eps", "sysbench\ncpu", "events/s", "higher", "sysbench"),
    ("bimodal_low_p999", "bimodal p99.9\nslowdown, low", "x", "lower", "bimodal"),
    ("bimodal_mid_p999", "bimodal p99.9\nslowdown, mid", "x", "lower", "bimodal"),
    ("bimodal_high_p999", "bimodal p99.9\nslowdown, high", "x", "lower", "bimodal"),
    ("bimodal_high_goodput", "bimodal goodput,\nhigh load", "req/s", "higher", "bimodal"),
    ("bimodal_max_load", "bimodal highest\nload at SLO", "load", "higher", "bimodal"),
    ("colocation_error", "colocation\nshare error", "pp", "target", "colocation"),
    ("colocation_lc_share", "colocation LC\nshare (no target)", "%", "none", "colocation"),
    ("guard_rescues", "guard rescues\n(akts rows)", "tasks", "none", None),  # rescues, of tasks
]
# better: "lower"/"higher" are coloured against the default row; "target" (only share has one) and "none" (a
# fact, not a merit: how much an LC class gets beside BE with no target to hold; how often the frame's
# bounded-wait guard had to run a task the policy left waiting, all workloads of the row) are not coloured.


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def row_figures(d, row, meta):
    """One row's figures (None where a workload failed or did not run)."""
    out = {c[0]: None for c in COLUMNS}
    rd = os.path.join(d, row)
    hb = load(os.path.join(rd, "hackbench.json"))
    if hb:
        out["hackbench_s"] = hb["metrics"].get("seconds")
    cyc = load(os.path.join(rd, "cyclictest.json"))
    if cyc:
        lat = cyc["metrics"].get("lc_wakeup_us", {})
        out["cyclictest_max_us"], out["cyclictest_avg_us"] = lat.get("max"), lat.get("avg")
        out["cyclictest_be_ops"] = cyc["metrics"].get("be_bogo_ops_per_s")
    sb = load(os.path.join(rd, "sysbench.json"))
    if sb:
        out["sysbench_eps"] = sb["metrics"].get("events_per_s")
    bm = load(os.path.join(rd, "bimodal.json"))
    if bm and bm.get("loads"):
        lo, mid, hi = bm["loads"][0], bm["loads"][(len(bm["loads"]) - 1) // 2], bm["loads"][-1]
        out["bimodal_low_p999"] = lo["slowdown"]["p999"]
        out["bimodal_mid_p999"] = mid["slowdown"]["p999"]
        out["bimodal_high_p999"] = hi["slowdown"]["p999"]
        # With requests left unfinished, the percentile is a lower bound.
        out["bimodal_low_unfinished"], out["bimodal_high_unfinished"] = lo["unfinished"], hi["unfinished"]
        out["bimodal_mid_unfinished"] = mid["unfinished"]
        out["bimodal_loads"] = [lo["load"], mid["load"], hi["load"]]
        # Requests that found every worker busy waited in the application, not in the kernel's queues.
        out["bimodal_app_queued"] = {str(l["load"]): l["app_queued"] for l in bm["loads"] if l.get("app_queued")}
        if bm.get("hints"):
            asked = sum(l["requests"] for l in bm["loads"])
            failed = sum(l.get("hint_errors", 0) for l in bm["loads"])
            out["bimodal_hints_failed"] = [failed, asked]
            out["bimodal_hint_p50_ms"] = {str(l["load"]): round((l.get("hint_ms") or {}).get("p50") or 0, 1)
                                          for l in bm["loads"]}
        out["bimodal_high_goodput"] = hi["goodput_rps"]
        out["bimodal_max_load"] = bm["max_load_at_slo"]
        out["bimodal_curve"] = [{"load": l["load"], "p999": l["slowdown"]["p999"], "goodput_rps": l["goodput_rps"],
                                 "unfinished": l["unfinished"], "short_p99_ms": l["short_latency_ms"]["p99"],
                                 "long_p99_ms": l["long_latency_ms"]["p99"]} for l in bm["loads"]]
    co = load(os.path.join(rd, "colocation.json"))
    if co and co.get("targets"):
        pts = co["targets"]
        out["colocation_shares"] = [{"target": p["target"], "lc_share": p["lc_share"]} for p in pts]
        if len(pts) == 1 and pts[0]["target"] is None:
            # No target to set: the share it gives is a fact about the policy, not an error against anything.
            if pts[0]["lc_share"] is not None:
                out["colocation_lc_share"] = 100 * pts[0]["lc_share"]
        else:
            errs = [abs(100 * p["lc_share"] - p["target"]) for p in pts if p["lc_share"] is not None]
            if errs:
                out["colocation_error"] = sum(errs) / len(errs)
    s0, s1 = load(os.path.join(rd, "stats0.json")), load(os.path.join(rd, "stats.json"))
    if s0 and s1:
        try:
            out["guard_rescues"] = sum(s1["guard"]["classes"][c]["rescues"] - s0["guard"]["classes"][c]["rescues"]
                                       for c in s1["guard"]["classes"])
        except (KeyError, TypeError):
            pass
    errors = {}
    for w in meta.get("workloads", []):
        p = os.path.join(rd, w + ".err")
        if os.path.exists(p) and not os.path.exists(os.path.join(rd, w + ".json")):  # failed, or did not count
            errors[w] = open(p, errors="replace").read().strip()[-300:]
    if errors:
        out["errors"] = errors
    return out


def collect(dirs):
    runs = []
    for d in dirs:
        meta = load(os.path.join(d, "meta.json"))
        if not meta:
            print(f"plot_matrix: {d} has no meta.json (did the guest run start?)", file=sys.stderr)
            continue
        rows = []
        for row in meta["rows"]:
            rm = load(os.path.join(d, row, "row.json")) or {"usable": False, "error": "the row did not run"}
            fig = row_figures(d, row, meta)
            rows.append({"row": row, "kind": rm.get("kind"), "usable": rm.get("usable", False),
                         "error": rm.get("error"), "invalid": rm.get("invalid", []), **fig})
        runs.append({"dir": d, "cpus": meta.get("cpus"), "meta": meta, "rows": rows})
    return runs


def cell(r, key, unit, workload):
    if not r["usable"]:
        return "-"
    if workload in r.get("invalid", []):
        return "invalid"
    text = fmt(r[key], unit)
    for level in ("low", "mid", "high"):
        if key == f"bimodal_{level}_p999" and r.get(f"bimodal_{level}_unfinished") and r[key] is not None:
            text = ">=" + text  # requests left unfinished: a lower bound
    return text


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "tasks":
        return str(int(v))
    if unit in ("load",):
        return f"{v:.2f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def table(runs):
    lines = []
    for run in runs:
        m = run["meta"]
        lines.append(f"### {run['cpus']} vCPUs (QEMU TCG: emulated figures; compare rows within this run)\n")
        ls = sorted(set(m["loads"]))
        lines.append(f"bimodal: {m['long_fraction'] * 100:g}% {m['long']} requests, the rest {m['short']}, loads "
                     f"{', '.join(str(x) for x in ls)} of capacity, {m['bimodal_seconds']:g} s each (low, mid, high: "
                     f"{ls[0]}, {ls[(len(ls) - 1) // 2]}, {ls[-1]}); "
                     f"the slowdown objective is {m.get('slo_slowdown', 50):g}. Colocation: as many LC as BE busy "
                     f"loops; share's targets {m['share_targets']} % (the other rows have none: their LC share). "
                     f"akts quantum timer: {m['quantum_timer']}.\n")
        head = "| row | " + " | ".join(f"{lab} ({unit}, {better})".replace("\n", " ") for _, lab, unit, better, _ in COLUMNS) + " |"
        lines.append(head)
        lines.append("|" + "---|" * (len(COLUMNS) + 1))
        for r in run["rows"]:
            name = r["row"] + ("" if r["usable"] else " (unusable: " + str(r["error"]) + ")")
            lines.append(f"| {name} | " + " | ".join(cell(r, k, unit, w) for k, _, unit, _, w in COLUMNS) + " |")
        notes = [f"- {r['row']}/{w} does not count: {e.splitlines()[-1] if e else '(no message)'}"
                 for r in run["rows"] for w, e in (r.get("errors") or {}).items()]
        for r in run["rows"]:
            if r.get("bimodal_hints_failed") and r["bimodal_hints_failed"][0]:
                f, n = r["bimodal_hints_failed"]
                notes.append(f"- {r['row']}/bimodal: {f} of {n} hints failed (median hint time per load, ms: "
                             f"{r.get('bimodal_hint_p50_ms')}): its figures measure the hint path as much as the policy")
            if r.get("bimodal_app_queued"):
                notes.append(f"- {r['row']}/bimodal: requests that found all workers busy and waited in the "
                             f"application, per load: {r['bimodal_app_queued']}")
        if notes:
            lines.append("")
            lines += notes
        lines.append("")
    return "\n".join(lines)


def score(v, base, better):
    """log2 of how many times better than the default row (positive: better); None where there is no ratio."""
    if better not in ("lower", "higher") or v is None or base is None or base <= 0:
        return None
    if v <= 0:  # nothing at all: the worst for "higher", the best for "lower"
        return -3.0 if better == "higher" else 3.0
    s = math.log2(base / v) if better == "lower" else math.log2(v / base)
    return max(-3.0, min(3.0, s))


def heatmap(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_rows = sum(len(r["rows"]) for r in runs)
    fig, axes = plt.subplots(len(runs), 1, figsize=(18, 1.4 + 0.42 * n_rows + 0.8 * len(runs)), squeeze=False,
                             gridspec_kw={"height_ratios": [max(1, len(r["rows"])) for r in runs]})
    im = None
    for ax, run in zip(axes[:, 0], runs):
        base = next((r for r in run["rows"] if r["row"] == "default" and r["usable"]), None)
        grid, text = [], []
        for r in run["rows"]:
            grid.append([score(r[k], base[k] if base else None, better)
                         if r["usable"] and w not in r.get("invalid", []) else None
                         for k, _, _, better, w in COLUMNS])
            text.append([cell(r, k, unit, w) for k, _, unit, _, w in COLUMNS])
        data = [[math.nan if v is None else v for v in g] for g in grid]
        im = ax.imshow(data, cmap="RdYlGn", vmin=-3, vmax=3, aspect="auto")
        ax.set_yticks(range(len(run["rows"])))
        ax.set_yticklabels([r["row"] + ("" if r["usable"] else " (unusable)") for r in run["rows"]])
        ax.set_xticks(range(len(COLUMNS)))
        ax.set_xticklabels([f"{lab}\n({unit}, {better})" for _, lab, unit, better, _ in COLUMNS], fontsize=7)
        ax.tick_params(axis="x", pad=2)
        ax.xaxis.tick_top()
        for i, row in enumerate(text):
            for j, t in enumerate(row):
                ax.text(j, i, t, ha="center", va="center", fontsize=8)
        ax.set_ylabel(f"{run['cpus']} vCPUs")
    fig.colorbar(im, ax=axes[:, 0].tolist(), shrink=0.6,
                 label="log2(times better than the default scheduler's row), clamped to +-3; uncoloured: no ratio")
    fig.suptitle("akts policies x workloads, with the kernel's default and tools/sched_ext peers (QEMU TCG, emulated)",
                 fontsize=10, y=1.0 + 0.35 / max(1, n_rows))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def bimodal_plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(7 * len(runs), 5), squeeze=False)
    names = sorted({r["row"] for run in runs for r in run["rows"]})
    colour = {n: plt.cm.tab20(i % 20) for i, n in enumerate(names)}  # a row keeps its colour in every panel
    for ax, run in zip(axes[0], runs):
        for r in run["rows"]:
            c = r.get("bimodal_curve")
            if not c or not r["usable"]:
                continue
            style = "--" if r["kind"] != "akts" else "-"
            pts = [(p["load"], max(p["p999"], 1)) for p in c if p["p999"] is not None]
            ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker="o", color=colour[r["row"]], label=r["row"])
        ax.axhline(run["meta"].get("slo_slowdown", 50), color="grey", lw=0.8, ls=":")
        ax.set_yscale("log")
        ax.set_xlabel("offered load (fraction of the CPUs' capacity)")
        ax.set_ylabel("p99.9 slowdown (latency / service time)")
        ax.set_title(f"bimodal server, {run['cpus']} vCPUs (dashed: not akts; dotted: the objective, "
                     f"{run['meta'].get('slo_slowdown', 50):g})", fontsize=9)
        ax.legend(fontsize=7, ncol=2)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if not args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    runs = collect(args)
    if not runs:
        sys.exit(1)
    out = os.path.dirname(os.path.abspath(args[0]))
    report = {"columns": [{"key": k, "label": lab, "unit": u, "better": b, "workload": w} for k, lab, u, b, w in COLUMNS],
              "runs": [{k: v for k, v in r.items()} for r in runs], "emulated": True}
    with open(os.path.join(out, "matrix.json"), "w") as f:
        json.dump(report, f, indent=1)
    md = table(runs)
    with open(os.path.join(out, "matrix.md"), "w") as f:
        f.write(md + "\n")
    try:
        heatmap(runs, os.path.join(out, "matrix.png"))
        bimodal_plot(runs, os.path.join(out, "matrix_bimodal.png"))
    except ImportError as e:
        print(f"plot_matrix: no charts ({e})", file=sys.stderr)
    if "--json" in sys.argv[1:]:
        print(json.dumps(report, indent=1))
    else:
        print(md)
        print(f"written: {out}/matrix.json, matrix.md, matrix.png, matrix_bimodal.png", file=sys.stderr)


if __name__ == "__main__":
    main()
