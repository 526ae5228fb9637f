#!/usr/bin/env python3
"""The controllers' evaluation (serving/controllers.sh's directory): a table per load and controller, the targets
against the best static policy, and the learner's regret against the oracle cycle by cycle, with a plot.

    evaluate.py OUT [--json] [--markdown FILE] [--plot FILE]

Figures per run (from load.json, batch.tsv and arm.json, read by report.py's read_run):
  objective met   the share of 1 s windows (by first-token time) whose TTFT p99 is within the objective and
                  at whose end no request has waited past it for its first token; a window with neither a first
                  token nor such a wait counts as met, as the daemon counts it. 1 s, not the daemon's 100 ms:
                  on this emulated node a first token takes seconds, and a 100 ms window rarely holds one.
  batch           the antagonists' CPU seconds over the load's phases.
  busy TTFT p50   the median TTFT of the requests sent in busy phases (more than one user) that had a first
                  token, completed or cut later in their decode (the same for the burst TTFT by cycle).
  switches        the policy switches a controller applied during the load.
Targets (issue 29), on each load, against the best static policy that meets the objective on it (the static arm
with the most batch work among those that missed at most 5% of the windows, and at least 1; with none, the one that
missed fewest, marked): the controller misses no more windows than it, plus 2 per regime change
(a change of the number of users); its batch work is at least 97% of its.
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

STATIC = ("default", "latency", "preempt", "throughput")  # the arms that switch nothing (the default: no akts at all)
CONTROLLERS = ("oracle", "detector", "bandit", "learner")
WINDOW_S = 1.0


def users(phase):
    return int(report.num(phase.get("max_concurrency")) or 0)


def busy_set(phases):
    """The indices of the busy phases: with open-loop arrivals (a request_rate), those busier than the lightest;
    with closed-loop users, those of more than one user."""
    rates = [report.num(p.get("request_rate")) for p in phases]
    if any(r for r in rates):
        low = min(r or 0.0 for r in rates)
        return {i for i, r in enumerate(rates) if (r or 0.0) > low * 1.01}
    return {i for i, p in enumerate(phases) if users(p) > 1}


def windows(r, objective_ms):
    """(met, total) 1 s windows over the load's phases. A window misses when the TTFT p99 of the first tokens that
    came in it is past the objective, or when at its end a request has waited past the objective for its first
    token (a stalled server answers nothing, and that is no success); a request that failed without a first token
    waited until it failed."""
    end = r["bounds"][-1]
    n = max(1, int(math.ceil(end / WINDOW_S)))
    samples = [[] for _ in range(n)]
    overdue = [False] * n
    for q in r["requests"]:
        start = report.num(q.get("start_s"))
        if start is None:
            continue
        # A first token counts whether or not the request then completed (one cut in its decode had its TTFT).
        ttft = report.num(q.get("ttft_ms"))
        if ttft:
            first = start + ttft / 1000.0
            k = int(first // WINDOW_S)
            if 0 <= k < n:
                samples[k].append(ttft)
        else:  # no first token: it waited until it failed (or past the run)
            first = start + (report.num(q.get("e2el_ms")) or 0) / 1000.0 if q.get("ok") is not True else end
        # Windows whose end finds it waiting past the objective for its first token.
        k = int(math.ceil((start + objective_ms / 1000.0) / WINDOW_S))
        while k * WINDOW_S <= min(first, end) and k <= n:
            overdue[k - 1] = True
            k += 1
    met = 0
    for s, late in zip(samples, overdue):
        if late:
            continue
        if s:
            s.sort()
            if s[min(len(s) - 1, int(math.ceil(0.99 * len(s))) - 1)] > objective_ms:
                continue
        met += 1
    return met, n


def busy_ttft(r):
    busy = busy_set(r["phases"])
    t = [report.num(q.get("ttft_ms")) for q in r["requests"]
         if isinstance(q.get("phase"), int) and q["phase"] in busy]
    t = [x for x in t if x]
    return statistics.median(t) if t else None


def regime_changes(phases):
    busy = busy_set(phases)
    return sum(1 for k in range(len(phases) - 1) if (k in busy) != (k + 1 in busy) or
               (not any(report.num(p.get("request_rate")) for p in phases) and users(phases[k]) != users(phases[k + 1])))


def cycles(r):
    """Per (steady, burst) pair: batch CPU s over the pair, burst TTFT p50 and its std."""
    out = []
    ph = r["phases"]
    busy = busy_set(ph)
    for k in range(0, len(ph) - 1, 2):
        if k + 1 not in busy:
            continue
        t0, t1 = r["bounds"][k], r["bounds"][k + 2]
        batch = None
        if r["batch"] and r["started"] is not None:
            a = report.interpolate(r["batch"], r["started"] + t0)
            b = report.interpolate(r["batch"], r["started"] + t1)
            batch = b - a if a is not None and b is not None else None
        t = [report.num(q.get("ttft_ms")) for q in r["requests"] if q.get("phase") == k + 1]
        t = [x for x in t if x]
        # Goodput over the pair: its requests (by the phase they were sent in) that met every limit, a second.
        sent = [q for q in r["requests"] if q.get("phase") in (k, k + 1)]
        good = sum(1 for q in sent if q.get("good") is True)
        out.append({"cycle": len(out) + 1, "batch_cpu_s": batch, "requests": len(sent),
                    "goodput": good / (t1 - t0) if t1 > t0 and sent and any("good" in q for q in sent) else None,
                    "burst_ttft_p50": statistics.median(t) if t else None,
                    "burst_ttft_std": statistics.pstdev(t) if len(t) > 1 else None})
    return out


def lc_demand(r):
    """Per regime (steady: at most one user; busy: more), the windows' LC demand under this run's policy, both ways:
    "time" (LC run + LC time waited, share of the CPUs: the detector's old figure) and "tasks" (LC run share + LC
    tasks waiting per CPU at the guard's firings: its figure now). None without telemetry.jsonl or wall times."""
    path = os.path.join(r["dir"], "telemetry.jsonl")
    if not os.path.exists(path) or r["started"] is None:
        return None
    out = {}
    none = True
    for line in open(path, errors="replace"):
        try:
            w = json.loads(line)
        except ValueError:
            continue
        t, period, cpus = report.num(w.get("unix_s")), report.num(w.get("period_s")), report.num(w.get("cpus")) or 1
        lc = (w.get("classes") or {}).get("lc") or {}
        if not t or not period:
            continue
        rel = t - r["started"]
        k = next((i for i in range(len(r["phases"])) if r["bounds"][i] <= rel < r["bounds"][i + 1]), None)
        if k is None:
            continue
        regime = "busy" if users(r["phases"][k]) > 1 else "steady"
        cap = period * 1000 * cpus
        run, waited, tasks = report.num(lc.get("run_ms")) or 0, report.num(lc.get("wait_ms")) or 0, report.num(lc.get("tasks_waiting"))
        none = False
        d = out.setdefault(regime, {"time": [], "tasks": []})
        d["time"].append((run + waited) / cap)
        if tasks is not None:
            d["tasks"].append(run / cap + tasks / cpus)
    return None if none else out


def quantiles(v):
    if not v:
        return None
    v = sorted(v)
    return {"median": statistics.median(v), "p90": v[min(len(v) - 1, int(0.9 * len(v)))], "max": v[-1], "n": len(v)}


def load_dir(d):
    meta = report.read_json(os.path.join(d, "meta.json")) if os.path.exists(os.path.join(d, "meta.json")) else {}
    objective_ms = report.parse_duration_ms(meta.get("objective_max", "6s")) or 6000
    runs, notes = {}, []
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if not os.path.isdir(p) or "-" not in name:
            continue
        arm, run = name.rsplit("-", 1)
        if not run.isdigit():
            continue
        try:
            r = report.read_run(p, arm, int(run), meta, notes)
        except report.Incomplete as e:
            notes.append((str(e), name))
            continue
        met, n = windows(r, objective_ms)
        r["lc_demand"] = lc_demand(r)
        explore = None
        try:
            st = report.read_json(os.path.join(p, "controller.json")).get("controller_state") or {}
            if "explorations" in st:
                end = report.num(st.get("first_exploration_ended_at_window"))
                explore = {"explorations": report.num(st.get("explorations")),
                           "first_ended_s": end * 0.1 if end is not None else None}
        except (OSError, ValueError, AttributeError):
            pass
        # Switches the controller applied after its first exploration ended (the learner's settling).
        after = None
        if explore and explore.get("first_ended_s") is not None and r["decisions"] is not None and r["started"]:
            t_end = explore["first_ended_s"]
            after = sum(1 for t, d in r["decisions"] if d.get("applied") is True
                        and d.get("source") not in ("operator", "config") and t - r["started"] > t_end)
        r["eval"] = {"met": met, "windows": n, "met_share": met / n, "missed": n - met,
                     "goodput": r["metrics"].get("goodput"), "switches_after_first_exploration": after,
                     "batch_cpu_s": r["metrics"].get("batch_cpu_s"), "busy_ttft_p50": busy_ttft(r),
                     "switches": r["metrics"].get("switches", 0 if arm in STATIC else None), "cycles": cycles(r),
                     "explore": explore}
        runs.setdefault(arm, []).append(r)
    return meta, objective_ms, runs, notes


def mean(rs, key):
    v = [r["eval"][key] for r in rs if r["eval"].get(key) is not None]
    return statistics.mean(v) if v else None


def evaluate(out):
    loads = {}
    for load in sorted(os.listdir(out)):
        d = os.path.join(out, load)
        if not os.path.isdir(d) or not os.path.exists(os.path.join(d, "meta.json")):
            continue
        meta, objective_ms, runs, notes = load_dir(d)
        some = next(iter(runs.values()), [None])[0]
        changes = regime_changes(some["phases"]) if some else 0
        keys = ("met_share", "missed", "batch_cpu_s", "busy_ttft_p50", "switches", "goodput",
                "switches_after_first_exploration")
        arms = {a: {k: mean(rs, k) for k in keys} for a, rs in runs.items()}
        for a, rs in runs.items():
            for k in ("goodput", "batch_cpu_s"):
                v = [r["eval"][k] for r in rs if r["eval"].get(k) is not None]
                arms[a][k + "_std"] = statistics.stdev(v) if len(v) > 1 else None
        for a in arms:
            arms[a]["runs"] = len(runs[a])
            ex = [r["eval"]["explore"] for r in runs[a] if r["eval"].get("explore")]
            if ex:
                arms[a]["explorations"] = statistics.mean(e["explorations"] for e in ex if e["explorations"] is not None)
                ends = [e["first_ended_s"] for e in ex if e["first_ended_s"] is not None]
                arms[a]["first_exploration_ended_s"] = statistics.mean(ends) if ends else None
        # The best static policy that meets the objective on this load: the most batch work among those that miss
        # at most 5% of the windows (at least 1); with none that meets it, the one that missed fewest, said so.
        statics = [a for a in STATIC if a in arms and arms[a]["missed"] is not None]
        best, best_meets = None, False
        if statics:
            meeting = [a for a in statics
                       if arms[a]["missed"] <= max(1.0, 0.05 * mean(runs[a], "windows"))]
            best_meets = bool(meeting)
            pool = meeting or [min(statics, key=lambda a: arms[a]["missed"])]
            best = max(pool, key=lambda a: arms[a]["batch_cpu_s"] or 0)
        for a in arms:
            if a in STATIC or best is None:
                continue
            b = arms[best]
            if not b["batch_cpu_s"]:
                continue
            ok_miss = arms[a]["missed"] is not None and arms[a]["missed"] <= b["missed"] + 2 * changes
            ratio = (arms[a]["batch_cpu_s"] / b["batch_cpu_s"]) if arms[a]["batch_cpu_s"] and b["batch_cpu_s"] else None
            arms[a]["vs_best_static"] = {"static": best, "missed_ok": ok_miss, "batch_ratio": ratio,
                                         "batch_ok": ratio is not None and ratio >= 0.97}
        demand = {}
        for a in ("latency", "throughput"):
            for r in runs.get(a, []):
                for regime, d in (r.get("lc_demand") or {}).items():
                    for way in ("time", "tasks"):
                        demand.setdefault(a, {}).setdefault(regime, {}).setdefault(way, []).extend(d[way])
        demand = {a: {g: {w: quantiles(v) for w, v in ways.items()} for g, ways in x.items()} for a, x in demand.items()}
        entry = {"phases": meta.get("phases"), "objective_ms": objective_ms, "regime_changes": changes,
                 "lc_demand": demand,
                 "best_static": best, "best_static_meets": best_meets, "arms": arms,
                 "notes": [f"{n}: {w}" for w, n in notes]}
        if "oracle" in runs and "learner" in runs:
            # Per cycle, the mean over each arm's runs (runs are interleaved, so cycle k of one run is cycle k of
            # the others).
            def per_cycle(arm, key):
                by = {}
                for r in runs[arm]:
                    for c in r["eval"]["cycles"]:
                        if c.get(key) is not None:
                            by.setdefault(c["cycle"], []).append(c[key])
                return {k: statistics.mean(v) for k, v in by.items()}
            ob, lb = per_cycle("oracle", "batch_cpu_s"), per_cycle("learner", "batch_cpu_s")
            ot, lt = per_cycle("oracle", "burst_ttft_p50"), per_cycle("learner", "burst_ttft_p50")
            og, lg = per_cycle("oracle", "goodput"), per_cycle("learner", "goodput")
            reg = []
            for k in sorted(set(ob) | set(lb)):
                reg.append({"cycle": k, "oracle_batch": ob.get(k), "learner_batch": lb.get(k),
                            "batch_regret": ob[k] - lb[k] if k in ob and k in lb else None,
                            "oracle_ttft_p50": ot.get(k), "oracle_ttft_std": None, "learner_ttft_p50": lt.get(k),
                            "oracle_goodput": og.get(k), "learner_goodput": lg.get(k)})
            entry["cycles"] = reg
            # The targets (issue 37): from the third cycle on, the learner's batch work at least 97% of the
            # oracle's; over the load, its goodput within one std of the oracle's.
            o3 = sum(ob[k] for k in ob if k >= 3 and k in lb)
            l3 = sum(lb[k] for k in lb if k >= 3 and k in ob)
            entry["long_targets"] = {
                "batch_ratio_from_cycle_3": l3 / o3 if o3 else None,
                "batch_ok": bool(o3) and l3 / o3 >= 0.97,
                "goodput": {"oracle": arms["oracle"].get("goodput"), "oracle_std": arms["oracle"].get("goodput_std"),
                            "learner": arms["learner"].get("goodput"), "learner_std": arms["learner"].get("goodput_std")},
                "goodput_ok": None if arms["oracle"].get("goodput") is None or arms["learner"].get("goodput") is None
                else arms["learner"]["goodput"] >= arms["oracle"]["goodput"] - (arms["oracle"].get("goodput_std") or 0.0)}
        loads[load] = entry
    return loads


def fmt(x, spec="{:.0f}"):
    return "-" if x is None else spec.format(x)


def markdown(loads):
    lines = ["| load | arm | runs | goodput (req/s) | objective met (windows) | batch (CPU s) | busy TTFT p50 (ms) | switches "
             "(after the first exploration) | vs best static |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    order = list(STATIC) + list(CONTROLLERS)
    for load, e in loads.items():
        for a in sorted(e["arms"], key=lambda a: order.index(a) if a in order else 99):
            s = e["arms"][a]
            v = s.get("vs_best_static")
            vs = "" if a in STATIC else "-" if not v else "{}: misses {}, batch {} ({})".format(
                v["static"], "ok" if v["missed_ok"] else "OVER", fmt(v["batch_ratio"], "{:.0%}"),
                "ok" if v["batch_ok"] else "SHORT")
            if a == e["best_static"]:
                vs = "best static" + ("" if e.get("best_static_meets") else " (none meets the objective: fewest misses)")
            if "explorations" in s:
                vs += "; {} exploration(s){}".format(fmt(s["explorations"]), "" if s.get("first_exploration_ended_s") is None
                                                      else ", the first over at {:.1f} s".format(s["first_exploration_ended_s"]))
            pm = lambda k, spec: fmt(s.get(k), spec) + ("" if s.get(k + "_std") is None else " ± " + fmt(s[k + "_std"], spec))
            sw = fmt(s["switches"], "{:.1f}") + ("" if s.get("switches_after_first_exploration") is None
                                                 else " ({:.1f})".format(s["switches_after_first_exploration"]))
            lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                load, a, s.get("runs", "-"), pm("goodput", "{:.2f}"), fmt(s["met_share"], "{:.0%}"),
                pm("batch_cpu_s", "{:.1f}"), fmt(s["busy_ttft_p50"]), sw, vs))
    cal = loads.get("calibration", {}).get("lc_demand")
    if cal:
        lines += ["", "LC demand on the calibration load, per window (share of the CPUs): *time* is LC run plus LC time "
                  "waited (the detector's figure before), *tasks* LC run plus LC tasks waiting per CPU (its figure now):", "",
                  "| regime | way | under throughput: median / p90 / max | under latency: median / p90 / max |",
                  "| --- | --- | --- | --- |"]
        for regime in ("steady", "busy"):
            for way in ("time", "tasks"):
                cells = []
                for a in ("throughput", "latency"):
                    q = ((cal.get(a) or {}).get(regime) or {}).get(way)
                    cells.append("-" if not q else "{:.2f} / {:.2f} / {:.2f} ({} windows)".format(q["median"], q["p90"], q["max"], q["n"]))
                lines.append("| {} | {} | {} | {} |".format(regime, way, *cells))
    for load, e in loads.items():
        if "cycles" not in e:
            continue
        lines += ["", f"Load `{load}`, the learner against the oracle, cycle by cycle (means over the runs):", "",
                  "| cycle | oracle batch (CPU s) | learner batch | regret (CPU s) | oracle burst TTFT p50 | learner burst TTFT p50 "
                  "| oracle goodput | learner goodput |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for c in e["cycles"]:
            lines.append("| {} | {} | {} | {} | {} | {} | {} | {} |".format(
                c["cycle"], fmt(c["oracle_batch"], "{:.2f}"), fmt(c["learner_batch"], "{:.2f}"),
                fmt(c["batch_regret"], "{:+.2f}"), fmt(c["oracle_ttft_p50"]), fmt(c["learner_ttft_p50"]),
                fmt(c.get("oracle_goodput"), "{:.2f}"), fmt(c.get("learner_goodput"), "{:.2f}")))
        t = e.get("long_targets")
        if t:
            g = t["goodput"]
            lines += ["", "From the third cycle on the learner did {} of the oracle's batch work ({}: 97% at least); "
                      "its goodput {} ± {} against the oracle's {} ± {} ({}: within one std at least).".format(
                          fmt(t["batch_ratio_from_cycle_3"], "{:.1%}"), "met" if t["batch_ok"] else "missed",
                          fmt(g["learner"], "{:.2f}"), fmt(g["learner_std"], "{:.2f}"), fmt(g["oracle"], "{:.2f}"),
                          fmt(g["oracle_std"], "{:.2f}"), "met" if t["goodput_ok"] else "missed")]
    return "\n".join(lines) + "\n"


def plot(loads, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("evaluate.py: no matplotlib, no plot", file=sys.stderr)
        return False
    # The load with the most cycles (controllers.sh's long trace).
    e = max((e for e in loads.values() if e.get("cycles")), key=lambda e: len(e["cycles"]), default=None)
    if not e:
        return False
    c = e["cycles"]
    x = [k["cycle"] for k in c]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    reg = [k["batch_regret"] if k["batch_regret"] is not None else float("nan") for k in c]
    cum = []
    tot = 0.0
    for v in reg:
        tot += 0 if math.isnan(v) else v
        cum.append(tot)
    a1.bar(x, reg, color="#c44", label="batch regret per cycle (oracle - learner, CPU s)")
    a1.plot(x, cum, color="#444", marker="o", label="cumulative")
    a1.axhline(0, color="#999", lw=0.8)
    a1.set_ylabel("CPU s")
    a1.legend(fontsize=8)
    a1.set_title("The learner against the oracle, cycle by cycle (emulated GPU node)")
    ot = [k["oracle_ttft_p50"] or float("nan") for k in c]
    os_ = [k["oracle_ttft_std"] or 0 for k in c]
    lt = [k["learner_ttft_p50"] or float("nan") for k in c]
    a2.errorbar(x, ot, yerr=os_, color="#2a6", marker="s", capsize=3, label="oracle burst TTFT p50 (± std)")
    a2.plot(x, lt, color="#36c", marker="o", label="learner burst TTFT p50")
    a2.set_ylabel("ms")
    a2.set_xlabel("cycle (steady, burst); a missing point: no burst request of that cycle had its first token")
    a2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", metavar="OUT", help="serving/controllers.sh's directory")
    ap.add_argument("--json", action="store_true", help="print the evaluation as one JSON object")
    ap.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    ap.add_argument("--plot", metavar="FILE", help="the regret-by-cycle plot (PNG; needs matplotlib)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.out):
        print(f"evaluate.py: {a.out} is not a directory", file=sys.stderr)
        return 2
    loads = evaluate(a.out)
    if not loads:
        print(f"evaluate.py: no load's experiment in {a.out}", file=sys.stderr)
        return 1
    md = markdown(loads)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)
    if a.plot:
        plot(loads, a.plot)
    if a.json:
        json.dump(loads, sys.stdout, indent=1, default=str)
        print()
    else:
        print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
