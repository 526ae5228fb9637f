#!/usr/bin/env python3
"""The controllers' evaluation (serving/controllers.sh's or learner_eval.sh's directory): a table per load and
controller, the targets against the best static policy, and the learner's regret cycle by cycle against the best
static policy of each phase in hindsight (else the oracle arm), with a plot.

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
The best static policy of each phase, in hindsight (a row of its own, "best static each phase"; hindsight()):
per phase, of the static arms of the controllers' policies whose good requests there are within the standard
error of the best's, the one with the most batch work there; each phase judged alone. Issue 37's long-trace
targets are against it when the static arms ran the load (else against the oracle arm, said in the notes): from
the third cycle on, the learner's batch work at least 97% of its; the learner's goodput within one std of its or
of the best static arm's, whichever is higher.
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


def batch_between(r, t0, t1):
    """The batch CPU s between t0 and t1 seconds into the load (batch.tsv, interpolated), or None."""
    if not r["batch"] or r["started"] is None:
        return None
    a = report.interpolate(r["batch"], r["started"] + t0)
    b = report.interpolate(r["batch"], r["started"] + t1)
    return b - a if a is not None and b is not None else None


def cycles(r):
    """Per (steady, burst) pair: batch CPU s over the pair, burst TTFT p50 and its std."""
    out = []
    ph = r["phases"]
    busy = busy_set(ph)
    for k in range(0, len(ph) - 1, 2):
        if k + 1 not in busy:
            continue
        t0, t1 = r["bounds"][k], r["bounds"][k + 2]
        batch = batch_between(r, t0, t1)
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


def phase_stats(r):
    """Per phase: the requests sent in it that met every limit (None when the run's requests carry no verdict),
    and the batch CPU s over it."""
    judged = any(isinstance(q.get("good"), bool) for q in r["requests"])
    out = []
    for k in range(len(r["phases"])):
        batch = batch_between(r, r["bounds"][k], r["bounds"][k + 1])
        good = sum(1 for q in r["requests"] if q.get("phase") == k and q.get("good") is True) if judged else None
        out.append({"good": good, "batch": batch})
    return out


def hindsight(runs, candidates):
    """The best static policy of each phase, known in hindsight, among `candidates` (the static arms of the
    policies the controller may select): per phase, the arm with the most good requests there, and of those whose
    mean is within the standard error of the difference from it (sqrt(s_a^2/n + s_top^2/n)), the one with the most
    batch work there. Each phase is judged alone, as if switching cost nothing and no phase inherited another's
    backlog: no controller is promised its figures, and the long trace's targets also ask for the best static
    arm's goodput (evaluate()). Runs are paired by their run number (run j of each arm ran side by side); only
    the numbers every candidate has are used. None (with why) when it cannot be made."""
    arms = [a for a in candidates if runs.get(a)]
    if not arms:
        return None, "no static arm of the controller's policies ran this load"
    by_run = {a: {r["run"]: r for r in runs[a]} for a in arms}
    common = sorted(set.intersection(*(set(by_run[a]) for a in arms)))
    if not common:
        return None, "the static arms have no run number in common"
    stats = {a: [phase_stats(by_run[a][j]) for j in common] for a in arms}
    phases = {len(s) for a in arms for s in stats[a]}
    if len(phases) != 1:
        return None, "the static arms' runs have different phases"
    nph, n = phases.pop(), len(common)
    choice, per_phase = [], []
    per_run_good, per_run_batch = [0.0] * n, [0.0] * n
    for k in range(nph):
        good = {a: [stats[a][j][k]["good"] for j in range(n)] for a in arms}
        batch = {a: [stats[a][j][k]["batch"] for j in range(n)] for a in arms}
        if any(v is None for a in arms for v in good[a] + batch[a]):
            return None, f"phase {k + 1}: a run without its verdicts or its batch work"
        mg = {a: statistics.mean(good[a]) for a in arms}
        sd = {a: statistics.stdev(good[a]) if n > 1 else 0.0 for a in arms}
        top = max(arms, key=lambda a: (mg[a], statistics.mean(batch[a])))
        pool = [a for a in arms if mg[a] >= mg[top] - math.sqrt(sd[a] ** 2 / n + sd[top] ** 2 / n)]
        best = max(pool, key=lambda a: statistics.mean(batch[a]))
        choice.append(best)
        per_phase.append({"arm": best, "good": mg[best], "batch": statistics.mean(batch[best])})
        for j in range(n):
            per_run_good[j] += good[best][j]
            per_run_batch[j] += batch[best][j]
    span = by_run[arms[0]][common[0]]["bounds"][-1]  # the phases' seconds, as report.py's goodput counts them
    gp = [g / span for g in per_run_good]
    return {"phases": choice, "per_phase": per_phase, "runs": n, "run_numbers": common, "arms": arms,
            "goodput": statistics.mean(gp), "goodput_std": statistics.stdev(gp) if n > 1 else None,
            "batch_cpu_s": statistics.mean(per_run_batch),
            "batch_cpu_s_std": statistics.stdev(per_run_batch) if n > 1 else None}, None


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
        online = meta.get("online_policies") or [a for a in STATIC if a != "default"]
        best_each, no_best_each = hindsight(runs, [a for a in STATIC if a in online])
        if no_best_each and "learner" in runs:
            notes.append((f"no best static policy of each phase: {no_best_each}", "evaluate.py"))
        if best_each:
            arms["best static each phase"] = {"runs": best_each["runs"], "goodput": best_each["goodput"],
                                              "goodput_std": best_each["goodput_std"],
                                              "batch_cpu_s": best_each["batch_cpu_s"],
                                              "batch_cpu_s_std": best_each["batch_cpu_s_std"],
                                              "met_share": None, "missed": None, "busy_ttft_p50": None,
                                              "switches": None, "switches_after_first_exploration": None}
        entry = {"phases": meta.get("phases"), "objective_ms": objective_ms, "regime_changes": changes,
                 "best_static_each_phase": best_each,
                 "lc_demand": demand,
                 "best_static": best, "best_static_meets": best_meets, "arms": arms,
                 "notes": [f"{n}: {w}" for w, n in notes]}
        if "learner" in runs and ("oracle" in runs or best_each):
            # Per cycle, the mean over each arm's runs (runs are interleaved, so cycle k of one run is cycle k of
            # the others).
            def per_cycle(arm, key):
                by = {}
                for r in runs.get(arm, []):
                    for c in r["eval"]["cycles"]:
                        if c.get(key) is not None:
                            by.setdefault(c["cycle"], []).append(c[key])
                return {k: statistics.mean(v) for k, v in by.items()}
            ob, lb = per_cycle("oracle", "batch_cpu_s"), per_cycle("learner", "batch_cpu_s")
            ot, lt = per_cycle("oracle", "burst_ttft_p50"), per_cycle("learner", "burst_ttft_p50")
            og, lg = per_cycle("oracle", "goodput"), per_cycle("learner", "goodput")
            # The yardstick: the best static policy of each phase in hindsight when the static arms ran this load
            # (the phase-clock oracle's rule, latency when busy and throughput else, is a guess that a node can
            # prove wrong: gpu-hostwork's throughput starves even the steady load); else the oracle arm.
            hb, hg = {}, {}
            if best_each:
                ph, bounds = some["phases"], some["bounds"]
                busy = busy_set(ph)
                c = 0
                for k in range(0, len(ph) - 1, 2):
                    if k + 1 not in busy:
                        continue
                    c += 1
                    pp = best_each["per_phase"]
                    hb[c] = pp[k]["batch"] + pp[k + 1]["batch"]
                    hg[c] = (pp[k]["good"] + pp[k + 1]["good"]) / (bounds[k + 2] - bounds[k])
            ref_b = hb or ob
            ref_name = "best static each phase" if hb else "oracle"
            if not hb:
                entry["notes"].append("evaluate.py: the long trace's targets are against the oracle arm: no best static "
                                      "policy of each phase")
            reg = []
            for k in sorted(set(ob) | set(lb) | set(hb)):
                reg.append({"cycle": k, "oracle_batch": ob.get(k), "best_each_batch": hb.get(k),
                            "learner_batch": lb.get(k),
                            "batch_regret": ref_b[k] - lb[k] if k in ref_b and k in lb else None,
                            "oracle_ttft_p50": ot.get(k), "oracle_ttft_std": None, "learner_ttft_p50": lt.get(k),
                            "oracle_goodput": og.get(k), "best_each_goodput": hg.get(k), "learner_goodput": lg.get(k)})
            entry["cycles"] = reg
            # The targets (issue 37): from the third cycle on, the learner's batch work at least 97% of the
            # yardstick's; over the load, its goodput within one std of the yardstick's.
            ref = arms.get(ref_name, {})
            o3 = sum(ref_b[k] for k in ref_b if k >= 3 and k in lb)
            l3 = sum(lb[k] for k in lb if k >= 3 and k in ref_b)
            # Goodput against the yardstick's, or the best static arm's when that is higher (each phase judged
            # alone can fall short of one arm over the whole load).
            gref, gstd, gname = ref.get("goodput"), ref.get("goodput_std"), ref_name
            b = arms.get(best) if best else None
            if b and b.get("goodput") is not None and (gref is None or b["goodput"] > gref):
                gref, gstd, gname = b["goodput"], b.get("goodput_std"), best
            lgood = arms["learner"].get("goodput")
            entry["long_targets"] = {
                "against": ref_name,
                "batch_ratio_from_cycle_3": l3 / o3 if o3 else None,
                "batch_ok": (l3 / o3 >= 0.97) if o3 else None,
                "goodput": {"reference": gref, "reference_std": gstd, "reference_arm": gname,
                            "learner": lgood, "learner_std": arms["learner"].get("goodput_std")},
                "goodput_ok": None if gref is None or lgood is None else lgood >= gref - (gstd or 0.0)}
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
        t = e.get("long_targets") or {}
        ref = t.get("against", "oracle")
        lines += ["", f"Load `{load}`, the learner against {'the best static policy of each phase (in hindsight)' if ref != 'oracle' else 'the oracle'}, "
                  "cycle by cycle (means over the runs):", "",
                  "| cycle | best static each phase: batch (CPU s) | oracle batch | learner batch | regret (CPU s) "
                  "| best each phase goodput | oracle goodput | learner goodput | oracle burst TTFT p50 | learner burst TTFT p50 |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for c in e["cycles"]:
            lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                c["cycle"], fmt(c.get("best_each_batch"), "{:.2f}"), fmt(c["oracle_batch"], "{:.2f}"),
                fmt(c["learner_batch"], "{:.2f}"), fmt(c["batch_regret"], "{:+.2f}"),
                fmt(c.get("best_each_goodput"), "{:.2f}"), fmt(c.get("oracle_goodput"), "{:.2f}"),
                fmt(c.get("learner_goodput"), "{:.2f}"), fmt(c["oracle_ttft_p50"]), fmt(c["learner_ttft_p50"])))
        if t:
            g = t["goodput"]
            verdict = lambda ok: "not applicable" if ok is None else "met" if ok else "missed"
            lines += ["", "Against {}: from the third cycle on the learner did {} of its batch work ({}: 97% at least); "
                      "its goodput {} ± {} against {}'s {} ± {} ({}: within one std at least).".format(
                          ref, fmt(t["batch_ratio_from_cycle_3"], "{:.1%}"), verdict(t["batch_ok"]),
                          fmt(g["learner"], "{:.2f}"), fmt(g["learner_std"], "{:.2f}"), g.get("reference_arm"),
                          fmt(g["reference"], "{:.2f}"), fmt(g["reference_std"], "{:.2f}"), verdict(t["goodput_ok"]))]
        be = e.get("best_static_each_phase")
        if be:
            lines += ["", "The best static policy of each phase, in hindsight (of {}; runs {}): ".format(
                ", ".join(be["arms"]), ", ".join(map(str, be["run_numbers"]))) + ", ".join(
                "{} {}".format(i + 1, a) for i, a in enumerate(be["phases"])) + "."]
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
    ref = (e.get("long_targets") or {}).get("against", "oracle")
    a1.bar(x, reg, color="#c44", label=f"batch regret per cycle ({ref} - learner, CPU s)")
    a1.plot(x, cum, color="#444", marker="o", label="cumulative")
    a1.axhline(0, color="#999", lw=0.8)
    a1.set_ylabel("CPU s")
    a1.legend(fontsize=8)
    a1.set_title(f"The learner against {ref}, cycle by cycle (emulated GPU node)")
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
