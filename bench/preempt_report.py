#!/usr/bin/env python3
"""preempt against the kernel's default and latency: the table of docs/policies.md from bench/preempt.sh's runs.

    preempt_report.py OUT [--json]

Per row (default, latency, latency with the quantum timer at 250 us, preempt), mean +- sample std over the runs
that count (a workload matrix.sh marked invalid, or missing, is left out and counted):
  cyclictest beside stress-ng on every CPU: cyclictest's wake-up latency p50, p99 and max (us, from its
  1 us histogram), stress-ng's bogo ops/s (the BE work), its share of the default's (the ratio of the means,
  and the mean +- std of each run's own ratio: the rows of one run share the machine's state), the node's
  context switches, rescheduling IPIs and irq_work interrupts per second (a sched_ext kick is an irq_work);
  colocation (as many LC busy loops as CPUs beside as many BE ones): the LC loops' CPU share, the BE loops' CPU
  ticks, context switches and IPIs per second.
The verdict lines say where preempt's p99 is at most the default's, with BE work within 5% of the default's.
"""
import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_matrix import load  # noqa: E402  (the matrix's reader of one workload's JSON, beside this file)

ROWS = [("default", "run{}", "default"), ("latency", "run{}", "latency"),
        ("latency+q250us", "run{}-q250", "latency"), ("preempt", "run{}", "preempt")]


def stats(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    if not xs:
        return None
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return {"mean": m, "std": sd, "n": len(xs)}


def collect(out):
    runs = sorted({int(os.path.basename(p)[3:]) for p in glob.glob(os.path.join(out, "run*"))
                   if os.path.basename(p)[3:].isdigit()})
    table, left_out, per_run = {}, [], {}
    for label, pattern, row in ROWS:
        vals = {}
        for i in runs:
            d = os.path.join(out, pattern.format(i), row)
            meta = load(os.path.join(d, "row.json")) or {}
            invalid = set(meta.get("invalid") or [])
            cyc = load(os.path.join(d, "cyclictest.json"))
            if cyc and meta.get("usable") and "cyclictest" not in invalid:
                lat = cyc.get("metrics", {}).get("lc_wakeup_us", {})
                sysc = cyc.get("system", {})
                if lat.get("p99") is None:
                    # Past cyclictest's histogram (30 ms): unknown, only above. Left out, and said.
                    left_out.append(f"{label} run {i}: cyclictest's p99 (past the histogram; max {lat.get('max')} us)")
                for k, v in (("cyc_p50_us", lat.get("p50")), ("cyc_p99_us", lat.get("p99")),
                             ("cyc_max_us", lat.get("max")), ("cyc_avg_us", lat.get("avg")),
                             ("be_bogo_ops_per_s", cyc.get("metrics", {}).get("be_bogo_ops_per_s")),
                             ("cyc_ctxt_per_s", sysc.get("context_switches_per_s")),
                             ("cyc_res_ipis_per_s", sysc.get("resched_ipis_per_s")),
                             ("cyc_irq_work_per_s", sysc.get("irq_work_per_s"))):
                    vals.setdefault(k, []).append(v)
                per_run.setdefault(label, {})[i] = cyc.get("metrics", {}).get("be_bogo_ops_per_s")
            else:
                left_out.append(f"{label} run {i}: cyclictest")
            col = load(os.path.join(d, "colocation.json"))
            if col and meta.get("usable") and "colocation" not in invalid and col.get("targets"):
                t = col["targets"][0]
                for k, v in (("coloc_lc_share", t.get("lc_share")), ("coloc_be_ticks", t.get("be_ticks")),
                             ("coloc_ctxt_per_s", t.get("context_switches_per_s")),
                             ("coloc_res_ipis_per_s", t.get("resched_ipis_per_s"))):
                    vals.setdefault(k, []).append(v)
            else:
                left_out.append(f"{label} run {i}: colocation")
        table[label] = {k: stats(v) for k, v in vals.items()}
    base = per_run.get("default", {})
    for label, by_run in per_run.items():
        table[label]["be_of_default_per_run"] = stats(
            [v / base[i] for i, v in by_run.items() if isinstance(v, (int, float)) and base.get(i)])
    return runs, table, left_out


def verdicts(table):
    d, p = table.get("default", {}), table.get("preempt", {})
    out = []
    dp, pp = d.get("cyc_p99_us"), p.get("cyc_p99_us")
    db, pb = d.get("be_bogo_ops_per_s"), p.get("be_bogo_ops_per_s")
    if dp and pp:
        out.append({"figure": "cyclictest p99", "preempt": pp["mean"], "default": dp["mean"],
                    "holds": pp["mean"] <= dp["mean"]})
    if db and pb:
        out.append({"figure": "BE work (stress-ng bogo ops/s) within 5% of the default's", "preempt": pb["mean"],
                    "default": db["mean"], "holds": pb["mean"] >= 0.95 * db["mean"]})
    return out


def fmt(s, digits=0):
    if not s:
        return "-"
    m = f"{s['mean']:.{digits}f}"
    return m if s["std"] is None else f"{m} ± {s['std']:.{digits}f}"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    runs, table, left_out = collect(args[0])
    if not runs:
        print(f"preempt_report: no runs in {args[0]}", file=sys.stderr)
        return 1
    v = verdicts(table)
    if "--json" in sys.argv:
        print(json.dumps({"runs": runs, "rows": table, "left_out": left_out, "verdicts": v}, indent=1))
        return 0
    base = (table.get("default", {}).get("be_bogo_ops_per_s") or {}).get("mean")
    print(f"cyclictest beside stress-ng ({len(runs)} runs; mean ± std; QEMU TCG: emulated)")
    print("| row | p50 (us) | p99 (us) | max (us) | BE bogo ops/s | of default's | per run | ctx switches/s | "
          "resched IPIs/s | irq_work/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, *_ in ROWS:
        r = table.get(label, {})
        be = r.get("be_bogo_ops_per_s")
        share = f"{be['mean'] / base:.1%}" if be and base else "-"
        pr = r.get("be_of_default_per_run")
        pr_s = "-" if not pr else f"{pr['mean']:.1%}" + ("" if pr["std"] is None else f" ± {pr['std']:.1%}")
        print(f"| {label} | {fmt(r.get('cyc_p50_us'))} | {fmt(r.get('cyc_p99_us'))} | {fmt(r.get('cyc_max_us'))} | "
              f"{fmt(be, 1)} | {share} | {pr_s} | {fmt(r.get('cyc_ctxt_per_s'))} | {fmt(r.get('cyc_res_ipis_per_s'))} | "
              f"{fmt(r.get('cyc_irq_work_per_s'))} |")
    print()
    print("colocation: as many LC busy loops as CPUs beside as many BE ones")
    print("| row | LC share of CPU | BE ticks | ctx switches/s | resched IPIs/s |")
    print("| --- | --- | --- | --- | --- |")
    for label, *_ in ROWS:
        r = table.get(label, {})
        print(f"| {label} | {fmt(r.get('coloc_lc_share'), 3)} | {fmt(r.get('coloc_be_ticks'))} | "
              f"{fmt(r.get('coloc_ctxt_per_s'))} | {fmt(r.get('coloc_res_ipis_per_s'))} |")
    print()
    for x in v:
        print(f"{x['figure']}: preempt {x['preempt']:.1f} against the default's {x['default']:.1f}: "
              f"{'holds' if x['holds'] else 'does not hold'}")
    if left_out:
        print("left out (invalid or missing): " + ", ".join(left_out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
