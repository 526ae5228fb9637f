#!/usr/bin/env python3
"""Report of the serving experiment (the paper's Table 2 with llama-server in a
QEMU guest): report.py OUT [--json] [--plots DIR | --no-plots] reads what
serving/experiment.sh wrote to OUT (meta.json, and per arm and run
OUT/ARM-RUN/ with load.json, arm.json, batch.tsv, decisions.jsonl) and prints,
per arm over its runs: burst TTFT p50/p99, steady TTFT p99, burst requests
served, batch work (CPU seconds over the load's phases, bogo ops, work per
CPU second, per phase), switches and the CPU busy shares, as mean ± sample
std (none with one run) with a Student-t 95% interval of the mean; then the
precondition (alone vs default: the contention is real), the targets of the
switching arms against the static latency and throughput arms (reported,
never asserted; no verdict from one run) with why an arm fell short, how fast
the switching arms entered and left latency around the burst, the caveats,
the verdict on the paper's claim and the incomplete runs (arm.json's error,
a failed attach check, llama-server not healthy after the run). --json
prints the same as one JSON object; that object is always written to
OUT/summary.json.
The table and the JSON need the standard library only (the guest has no
numpy or matplotlib). With matplotlib (the host), also writes DIR/timeline.png
(per arm, one run: each request's TTFT, the phases, the active policy, grey
hatched where unknown, the antagonists' CPU rate) and DIR/bars.png (per metric, one bar per arm with its
95% interval and the runs' values); DIR defaults to OUT.
Exit 0, or 2 when OUT holds no runs."""
import argparse
import json
import math
import os
import re
import signal
import statistics
import sys
import textwrap
from datetime import datetime, timedelta, timezone

# The arms in the order experiment.sh knows them (used when meta.json is missing).
KNOWN_ARMS = ["alone", "default", "scx_simple", "latency", "latency_q250", "preempt", "throughput", "oracle", "detector", "bandit", "learner", "llm"]
NO_SWITCHING = {"alone", "default", "scx_simple", "latency", "latency_q250", "preempt", "throughput"}  # every other arm switches policies

# Two-sided 95% quantiles (0.975) of Student's t for df = 1..30; past 30 the
# normal's 1.96 (a little narrow: t is 2.021 at df 40, 2.000 at df 60).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

# key: (header line 1, header line 2, factor from the stored value to the shown one)
METRICS = {
    "burst_ttft_p50": ("burst TTFT", "p50 (ms)", 1),
    "burst_ttft_p99": ("burst TTFT", "p99 (ms)", 1),
    "steady_ttft_p99": ("steady TTFT", "p99 (ms)", 1),
    "steady_ttft_p50": ("steady TTFT", "p50 (ms)", 1),
    "burst_served": ("burst", "served (req)", 1),
    "steady_served": ("steady", "served (req)", 1),
    "steady_empty_phases": ("steady phases", "none served", 1),
    "steady_e2el_p50": ("steady E2EL", "p50 (ms)", 1),
    "burst_failed": ("burst", "failed (req)", 1),
    "batch_cpu_s": ("batch", "(CPU s)", 1),
    "batch_cpu_s_arm": ("batch, arm.json", "bracket (CPU s)", 1),
    "bogo_ops": ("batch", "(bogo ops)", 1),
    "stress_cpu_s": ("stress-ng", "(CPU s)", 1),
    "work_per_cpu_s": ("bogo ops", "per CPU s", 1),
    "workers": ("antagonist", "workers", 1),
    "oracle_offset_s": ("oracle clock", "offset (s)", 1),
    "oracle_lag_max_ms": ("oracle lag", "max (ms)", 1),
    "goodput": ("goodput", "(req/s)", 1),
    "goodput_burst": ("goodput", "burst (req/s)", 1),
    "goodput_steady": ("goodput", "steady (req/s)", 1),
    "good_share": ("requests", "good (%)", 100),
    "unanswered": ("failed or", "unanswered", 1),
    "sent": ("requests", "sent", 1),
    "ttft_p50": ("TTFT", "p50 (ms)", 1),
    "ttft_p99": ("TTFT", "p99 (ms)", 1),
    "tpot_p50": ("TPOT", "p50 (ms)", 1),
    "tpot_p99": ("TPOT", "p99 (ms)", 1),
    "e2el_p50": ("E2EL", "p50 (ms)", 1),
    "e2el_p99": ("E2EL", "p99 (ms)", 1),
    "enter_latency_s": ("enter latency", "(s)", 1),
    "leave_latency_s": ("leave latency", "(s)", 1),
    "burst_latency_share": ("latency in", "burst (%)", 100),
    "latency_held_s": ("latency held", "(s)", 1),
    "refused": ("answers", "refused", 1),
    "switches": ("switches", "(count)", 1),
    "measured_busy": ("measured", "CPU busy %", 100),
    "apparatus_busy": ("apparatus", "CPU busy %", 100),
    "loadgen_cpu_s": ("loadgen", "(CPU s)", 1),
    "daemon_cpu_s": ("daemon", "(CPU s)", 1),
    "llm_server_cpu_s": ("llm server", "(CPU s)", 1),
    "standin_busy": ("stand-in", "busy %", 100),
    "standin_ms_per_req": ("stand-in CPU", "ms / request", 1),
    "standin_runq_ms_per_req": ("stand-in queued", "ms / request", 1),
    "server_ms_per_req": ("llama-server CPU", "ms / request", 1),
}
TABLE2 = ["burst_ttft_p50", "burst_ttft_p99", "steady_ttft_p99", "burst_served", "batch_cpu_s", "switches"]
# The operator's table: the headline columns under the objective's limits (goodput: requests per second that met
# every limit; a failed or unanswered request never does), then the latencies over the whole load.
GOODPUT = ["burst_ttft_p50", "burst_served", "goodput_burst", "goodput_steady", "goodput", "batch_cpu_s", "unanswered"]
LATENCIES = ["ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "e2el_p50", "e2el_p99"]
STATIC = ["default", "scx_simple", "latency", "latency_q250", "preempt", "throughput"]  # the arms that switch nothing (alone aside)
ORACLE_LAG_MAX_MS = 200  # the oracle's switch after a phase boundary, at most (issue 35)
BATCH_PHASE = "batch_cpu_s_phase"  # + "<k>_<name>": batch work in phase k (1-based), from batch.tsv
BATCH_TARGET = 0.97  # a switching arm's batch work, as a share of static throughput's
LATE_S = 1.0  # a switching arm that entered latency later than this after the burst began switched late
WORK_DROP = 0.10  # an arm's bogo ops per CPU second this far below the median arm's: a caveat
BUSY_APPARATUS = 0.80  # the apparatus CPU busier than this: a caveat
ONE_RUN = "no spread: not a test"
# The calibration's targets on the fixed arms (the paper's shape, issue 27): checked, reported, never asserted.
CONTENTION_MIN = 3.0  # default's steady TTFT p99 over alone's
LATENCY_BATCH = (0.90, 0.95)  # static latency's batch work as a share of static throughput's (the paper: 91%)
BURST_SLOWER_MIN = 1.5  # static throughput's burst TTFT p50 over latency's (the paper: 1.59x)
BURST_FEWER_MIN = 0.25  # static throughput serves at least this share fewer burst requests (the paper: 35%)
STANDIN_SPREAD = 0.10  # the stand-in's figures differing more than this between arms: said, and accounted for


class Incomplete(Exception):
    pass


def num(x):
    """x as a float, else None: bools are not numbers here, nor is anything past 1e12 (no figure here
    comes near it; a corrupt one must not overflow the sums)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) and abs(x) <= 1e12 else None


def sub(d, *keys):
    """d[k1][k2]... or None when a level is missing or not an object."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def read_json(path):
    with open(path) as f:
        return json.load(f)


_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")


def read_object(path, notes, name, without):
    """A JSON object from path, or {} with a note (missing, unparsable or not an object: `without` says what
    is lost)."""
    base = os.path.basename(path)
    if not os.path.exists(path):
        notes.append((f"no {base}: {without}", name))
        return {}
    try:
        j = read_json(path)
        if not isinstance(j, dict):
            raise ValueError("not an object")
        return j
    except (OSError, ValueError) as e:
        notes.append((f"{base} unparsable ({str(e).splitlines()[0][:60]}): {without}", name))
        return {}


def parse_time(s):
    """RFC 3339 ("2026-11-30T12:47:23.378Z") to Unix seconds; None if it is not one."""
    m = _TIME.match(s) if isinstance(s, str) else None
    if not m:
        return None
    try:
        t = datetime(*(int(m.group(i)) for i in range(1, 7)), tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None
    t += float(m.group(7) or 0)
    tz = m.group(8)
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        hh, mm = int(tz[1:3]), int(tz[-2:])
        t -= sign * timedelta(hours=hh, minutes=mm).total_seconds()
    return t


def cpu_count(cpus):
    """How many CPUs a taskset list ("0", "0-1,3") names; None if it is not one."""
    if not isinstance(cpus, str) or not cpus.strip():
        return None
    n = 0
    try:
        for part in cpus.split(","):
            a, _, b = part.partition("-")
            n += int(b) - int(a) + 1 if b else 1
    except ValueError:
        return None
    return n


# --- one run ---------------------------------------------------------------

def read_decisions(path):
    """The decision records of a decisions.jsonl: [(unix time, record)], in time order; malformed lines skipped."""
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(r, dict) or r.get("type") != "decision":
                    continue
                t = parse_time(r.get("time"))
                if t is not None:
                    out.append((t, r))
    except OSError:
        return None
    out.sort(key=lambda x: x[0])
    return out


def read_batch(path, measured_cpus, notes, name):
    """batch.tsv as [(unix time, cumulative CPU s)], in time order; None when absent or empty.

    The file should hold CPU seconds. Where its rate over the whole file exceeds
    the measured CPUs (impossible for seconds), it holds clock ticks (/proc's
    utime + stime); they are converted with USER_HZ = 100, with a note."""
    try:
        with open(path, errors="replace") as f:
            rows = []
            for line in f:
                p = line.split()
                if len(p) < 2:
                    continue
                try:
                    t, c = float(p[0]), float(p[1])
                except ValueError:
                    continue
                if math.isfinite(t) and math.isfinite(c):
                    rows.append((t, c))
    except OSError:
        return None
    rows.sort()
    if len(rows) < 2:
        return None
    span = rows[-1][0] - rows[0][0]
    if span > 0 and (rows[-1][1] - rows[0][1]) / span > 1.5 * (measured_cpus or 1):
        notes.append(("batch.tsv looks like clock ticks, not CPU seconds: divided by 100 (USER_HZ)", name))
        rows = [(t, c / 100.0) for t, c in rows]
    return rows


def interpolate(rows, t, slack=1.0):
    """The cumulative value at t, linear between samples; clamped up to `slack` s outside them, else None."""
    if t < rows[0][0]:
        return rows[0][1] if rows[0][0] - t <= slack else None
    if t > rows[-1][0]:
        return rows[-1][1] if t - rows[-1][0] <= slack else None
    lo, hi = 0, len(rows) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if rows[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (t0, c0), (t1, c1) = rows[lo], rows[hi]
    return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def phase_ttft(p, key):
    """A phase's TTFT figure; None when it had no TTFT sample (the load generator writes 0 then)."""
    n = p.get("n_ttft", p.get("completed"))
    if num(n) == 0:
        return None
    return num(p.get(key))


def unusable(armj):
    """Why arm.json says the run is unusable ("" when it does not): its error, a failed attach check, or
    llama-server not answering /health after the run (fields older runs lack: absent means no objection)."""
    why = []
    err = armj.get("error")
    if isinstance(err, str) and err.strip():
        why.append(err.strip())
    elif err is True or isinstance(err, (int, float, list, dict)) and not isinstance(err, bool) and err:
        why.append(f"arm.json's error is {json.dumps(err)[:80]}")
    att = armj.get("attach")
    if isinstance(att, dict) and att.get("ok") is False:
        w = att.get("why")
        why.append(w.strip() if isinstance(w, str) and w.strip() else
                   f"the scheduler attach check failed (expected {att.get('expected')!r}, "
                   f"sched_ext {att.get('ops_start')!r} at the load's start, {att.get('ops_end')!r} at its end)")
    if sub(armj, "server_healthy", "after") is False:
        why.append("llama-server did not answer /health after the run")
    return "; ".join(why)


def read_run(d, arm, run, meta, notes):
    """The run in folder d: a dict with its inputs and "metrics"; raises Incomplete(why)."""
    name = f"{arm}-{run}"
    try:  # first: arm.json's own verdict on the run (more telling than a missing load.json)
        pre = read_json(os.path.join(d, "arm.json"))
    except (OSError, ValueError):
        pre = None
    if isinstance(pre, dict) and unusable(pre):
        raise Incomplete(unusable(pre))
    path = os.path.join(d, "load.json")
    if not os.path.exists(path):
        raise Incomplete("no load.json")
    try:
        load = read_json(path)
    except (OSError, ValueError) as e:
        raise Incomplete(f"load.json unparsable ({str(e).splitlines()[0][:80]})")
    if not isinstance(load, dict):
        raise Incomplete("load.json is not an object")
    if load.get("canceled") is True:
        raise Incomplete("the load was canceled")
    phases = load.get("phases")
    if not isinstance(phases, list) or not phases or not all(isinstance(p, dict) for p in phases):
        raise Incomplete("load.json's phases are missing or malformed")
    requests = load.get("requests") if isinstance(load.get("requests"), list) else []
    requests = [r for r in requests if isinstance(r, dict)]

    armj = read_object(os.path.join(d, "arm.json"), notes, name, "no batch or switch figures")
    # Older layouts: the daemon's config (slots, initial policy) in the run's akts.json.
    cfg = {}
    try:
        cfg = read_json(os.path.join(d, "akts.json"))
        cfg = cfg if isinstance(cfg, dict) else {}
    except (OSError, ValueError):
        pass

    m = {}
    burst = [p for p in phases if p.get("name") == "burst"]
    steady = [p for p in phases if p.get("name") == "steady"]
    if burst:
        b = burst[0]
        m["burst_ttft_p50"] = phase_ttft(b, "median_ttft_ms")
        m["burst_ttft_p99"] = phase_ttft(b, "p99_ttft_ms")
        m["burst_served"] = num(b.get("completed"))
        m["burst_failed"] = num(b.get("failed"))
    # What a steady user gets beyond TTFT: requests finished in the steady phases, and their whole latency.
    m["steady_served"] = float(sum(num(p.get("completed")) or 0 for p in steady)) if steady else None
    # A steady phase that finished no request (its requests failed or went unanswered; before issue 35 the closed
    # loop's steady user, the load generator's worker 0, could also still hold a burst request): the phase's TTFT
    # percentiles are missing, not good.
    m["steady_empty_phases"] = float(sum(1 for p in steady if not num(p.get("completed")))) if steady else None
    e2els = [num(r.get("e2el_ms")) for r in requests if r.get("ok") is True and r.get("phase_name") == "steady"]
    e2els = [t for t in e2els if t is not None]
    if e2els:
        m["steady_e2el_p50"] = statistics.median(e2els)
    p99s = [v for v in (phase_ttft(p, "p99_ttft_ms") for p in steady) if v is not None]
    if p99s:
        m["steady_ttft_p99"] = max(p99s)
    # Steady p50: the median of every steady request's TTFT (medians of phases do not combine).
    steady_idx = {i for i, p in enumerate(phases) if p.get("name") == "steady"}
    ttfts = [num(r.get("ttft_ms")) for r in requests
             if r.get("ok") is True and (r.get("phase_name") == "steady" if "phase_name" in r
                                         else isinstance(r.get("phase"), int) and r["phase"] in steady_idx)]
    ttfts = [t for t in ttfts if t is not None]
    if ttfts:
        m["steady_ttft_p50"] = statistics.median(ttfts)
    elif len(steady) == 1:
        m["steady_ttft_p50"] = phase_ttft(steady[0], "median_ttft_ms")

    m.update(operator_figures(phases, requests))

    m["batch_cpu_s_arm"] = num(armj.get("batch_cpu_s"))
    m["bogo_ops"] = num(armj.get("bogo_ops"))
    m["stress_cpu_s"] = num(armj.get("stress_cpu_s"))
    if m["bogo_ops"] is not None and m["stress_cpu_s"]:
        m["work_per_cpu_s"] = m["bogo_ops"] / m["stress_cpu_s"] if m["stress_cpu_s"] > 0 else None
    m["workers"] = num(armj.get("workers"))
    m["oracle_offset_s"] = num(armj.get("oracle_offset_s"))
    sw = num(armj.get("switches"))
    m["switches"] = sw if sw is not None else num(armj.get("decisions_applied"))  # older arm.json
    m["measured_busy"] = num(sub(armj, "cpu_busy", "measured"))
    m["apparatus_busy"] = num(sub(armj, "cpu_busy", "apparatus"))
    for k in ("loadgen", "daemon", "llm_server"):
        m[k + "_cpu_s"] = num(sub(armj, "apparatus_cpu_s", k))
    # Like for like on the GPU node (runs with a stand-in): its busy share, its CPU time and its time queued on
    # the apparatus CPU per request, and llama-server's CPU time per request on the measured CPU (the serving
    # path's cost). Requests: every one sent, finished or not (a timed-out request was computed in part).
    sent = sum((num(p.get("completed")) or 0) + (num(p.get("failed")) or 0) for p in phases)
    wall, standin, server = num(armj.get("load_wall_s")), num(armj.get("standin_cpu_s")), num(armj.get("server_cpu_s"))
    runq = num(armj.get("standin_runq_s"))
    if standin is not None and standin >= 0:
        if wall:
            m["standin_busy"] = standin / wall
        if sent:
            m["standin_ms_per_req"] = 1000 * standin / sent
            if runq is not None and runq >= 0:
                m["standin_runq_ms_per_req"] = 1000 * runq / sent
            if server is not None:
                m["server_ms_per_req"] = 1000 * server / sent

    started = num(load.get("started_unix"))
    measured_cpus = cpu_count(meta.get("measured_cpus"))
    batch = read_batch(os.path.join(d, "batch.tsv"), measured_cpus, notes, name)
    bounds = [0.0]
    for p in phases:
        dur = num(p.get("duration"))
        if dur is None or dur <= 0:
            raise Incomplete(f"load.json's phase {p.get('name', '?')!r} has no duration")
        bounds.append(bounds[-1] + dur)
    if batch and started is not None:
        edge = max(batch[0][0] - started, started + bounds[-1] - batch[-1][0])
        if edge > 0.5:
            notes.append((f"batch.tsv misses {edge:.2f} s at an edge of the phases: the nearest sample stands in", name))
        for k, p in enumerate(phases):
            a = interpolate(batch, started + bounds[k])
            b = interpolate(batch, started + bounds[k + 1])
            if a is not None and b is not None:
                m[f"{BATCH_PHASE}{k + 1}_{p.get('name', '?')}"] = b - a
    # The batch work: the antagonists' CPU seconds over the load's phases (started_unix to the sum of the
    # phases' durations), not arm.json's bracket (which holds the load generator's start-up and its tail
    # requests). arm.json's figure only without a batch.tsv covering the phases, with a note.
    a = interpolate(batch, started) if batch and started is not None else None
    b = interpolate(batch, started + bounds[-1]) if batch and started is not None else None
    batch_source = None
    if a is not None and b is not None:
        m["batch_cpu_s"], batch_source = b - a, "batch.tsv"
    elif m["batch_cpu_s_arm"] is not None:
        m["batch_cpu_s"], batch_source = m["batch_cpu_s_arm"], "arm.json"
        if armj.get("antagonists") is not False:
            why = ("no batch.tsv" if not os.path.exists(os.path.join(d, "batch.tsv")) else
                   "batch.tsv unusable" if not batch else "load.json has no started_unix" if started is None
                   else "batch.tsv does not cover the load's phases")
            notes.append((f"{why}: batch CPU seconds from arm.json (the antagonists' whole bracket, the load "
                          "generator's start-up and tail included: not comparable with the other runs')", name))

    decisions = read_decisions(os.path.join(d, "decisions.jsonl"))
    slots = armj.get("slots") if isinstance(armj.get("slots"), list) and armj.get("slots") else cfg.get("policies")
    initial = armj.get("initial") if "initial" in armj else cfg.get("initial")
    attach = armj.get("attach") if isinstance(armj.get("attach"), dict) else None
    r = {"arm": arm, "run": run, "dir": d, "name": name, "load": load, "phases": phases, "requests": requests,
         "bounds": bounds, "started": started, "arm_json": armj, "batch": batch, "decisions": decisions,
         "slots": slots if isinstance(slots, list) else [], "initial": initial if isinstance(initial, str) else None,
         "label": armj.get("label") if isinstance(armj.get("label"), str) else None, "attach": attach,
         "batch_source": batch_source, "schedule": load.get("schedule") if isinstance(load.get("schedule"), dict) else None}
    if arm not in NO_SWITCHING:
        # Answers the controller gave that were no filled slot (the llm's), and the reaction to the burst.
        # The daemon's own count (arm.json "controller"): its log writes a repeated refusal once.
        ctl = armj.get("controller") if isinstance(armj.get("controller"), dict) else {}
        if num(ctl.get("refused_outputs")) is not None:
            m["refused"] = num(ctl.get("refused_outputs"))
            m["answered"] = num(ctl.get("answered"))
        elif decisions is not None:
            m["refused"] = float(sum(1 for _, x in decisions if "refused" in str(x.get("verdict", ""))
                                     or x.get("applied") is False and x.get("raw") is not None))
            if m["refused"]:
                m["refused_from_log"] = 1.0  # the log writes a repeated refusal once: a lower bound
        m.update(reaction(r, max(bounds[-1], num(load.get("elapsed_s")) or 0.0)))
    if arm == "oracle":
        r["oracle_lags"] = oracle_lags(r, meta)
        lags = [x["lag_ms"] for x in r["oracle_lags"]]
        if lags:
            m["oracle_lag_max_ms"] = None if None in lags else max(lags)
    r["metrics"] = {k: v for k, v in m.items() if v is not None}
    return r


def pct(values, p):
    """numpy's percentile (linear between the closest ranks), as the load generator computes it; None if empty."""
    v = sorted(values)
    if not v:
        return None
    rank = p / 100 * (len(v) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def operator_figures(phases, requests):
    """What an operator judges a run by: goodput (requests per second of the phases that met every limit of
    the objective, the load generator's verdict per request, "good"), per phase name and over the load; the
    requests that failed or went unanswered by the drain deadline; TTFT, TPOT and E2EL p50/p99 over the
    completed requests of the whole load. No goodput when the load had no limits (an older run)."""
    m = {}
    secs = {}
    for p in phases:
        secs[p.get("name")] = secs.get(p.get("name"), 0.0) + (num(p.get("duration")) or 0.0)
    m["sent"] = float(len(requests))
    m["unanswered"] = float(sum(1 for r in requests if r.get("ok") is not True))
    if any(isinstance(r.get("good"), bool) for r in requests):
        good = {}
        for r in requests:
            if r.get("good") is True:
                good[r.get("phase_name")] = good.get(r.get("phase_name"), 0) + 1
        for name in ("burst", "steady"):
            if secs.get(name):
                m["goodput_" + name] = good.get(name, 0) / secs[name]
        total = sum(secs.values())
        if total > 0:
            m["goodput"] = sum(good.values()) / total
        if requests:
            m["good_share"] = sum(good.values()) / len(requests)
    ok = [r for r in requests if r.get("ok") is True]
    for key, field in (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("e2el", "e2el_ms")):
        vals = [num(r.get(field)) for r in ok]
        vals = [v for v in vals if v is not None]
        m[key + "_p50"], m[key + "_p99"] = pct(vals, 50), pct(vals, 99)
    return m


def oracle_lags(r, meta):
    """The oracle's lag behind each phase boundary where its policy changes: [{"phase", "boundary_s",
    "policy", "lag_ms"}], lag_ms from the phase's start (load.json: started_unix + the phase's started_s, or
    the phases' durations) to the oracle's applied switch to that policy; None when it never switched there
    within the phase."""
    try:
        with open(os.path.join(os.path.dirname(r["dir"]), "oracle.json")) as f:
            want = json.load(f).get("phases") or {}
    except (OSError, ValueError, AttributeError):
        want = {}
    if not want or r["started"] is None or r["decisions"] is None:
        return []
    out = []
    prev = r["initial"]
    for k, p in enumerate(r["phases"]):
        pol = want.get(p.get("name"))
        if pol is None:
            continue
        if pol != prev:
            start = num(p.get("started_s"))
            start = r["bounds"][k] if start is None else start
            end = r["bounds"][k + 1]
            lag = None
            for t, d in r["decisions"]:
                rel = t - r["started"]
                i = d.get("proposed")
                if (d.get("applied") is True and d.get("source") not in ("operator", "config")
                        and isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(r["slots"])
                        and r["slots"][i] == pol and start - 0.05 <= rel <= end):
                    lag = max(0.0, rel - start) * 1000
                    break
            out.append({"phase": k + 1, "name": p.get("name"), "boundary_s": round(start, 3), "policy": pol,
                        "lag_ms": None if lag is None else round(lag, 1)})
        prev = pol
    return out


def reaction(r, t_end):
    """When the run entered latency around the burst (s after the burst began; negative: before) and left it
    (s after the burst ended; negative: within it), the share of the burst it spent in latency and the
    seconds it held latency over the load; {} without decisions or a burst. From the decisions'
    selected_after through the slots, at their times since started_unix."""
    segs = decision_segments(r, t_end)
    k = next((i for i, p in enumerate(r["phases"]) if p.get("name") == "burst"), None)
    if segs is None or k is None:
        return {}
    bs, be = r["bounds"][k], r["bounds"][k + 1]
    lat = [(a, b) for a, b, p in segs if p == "latency"]
    out = {"latency_held_s": sum(min(b, t_end) - max(a, 0.0) for a, b in lat if b > a),
           "burst_latency_share": (sum(max(0.0, min(b, be) - max(a, bs)) for a, b in lat) / (be - bs)
                                   if be > bs else None)}
    hit = [(a, b) for a, b in lat if b > bs and a < be]  # latency at some time in the burst
    if hit:
        a, b = hit[0]
        out["enter_latency_s"] = a - bs
        out["leave_latency_s"] = b - be if b < t_end else None  # None: it held latency to the load's end
    return out


# --- statistics ------------------------------------------------------------

def describe(values, runs):
    """n, mean, sample std (None with one run: no spread), the 95% interval of the mean (None with one run)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "ci95": None, "values": [], "runs": []}
    mean = math.fsum(values) / n
    std = statistics.stdev(values) if n > 1 else None
    ci = None
    if n > 1:
        half = (T975[n - 2] if n - 1 <= len(T975) else 1.96) * std / math.sqrt(n)
        ci = [mean - half, mean + half]
    return {"n": n, "mean": mean, "std": std, "ci95": ci, "values": values, "runs": runs}


def mean_of(arms, arm, key):
    return sub(arms, arm, key, "mean")


def std_of(arms, arm, key):
    return sub(arms, arm, key, "std")


def n_of(arms, arm, key):
    return sub(arms, arm, key, "n") or 0


def one_run_words(word, ns):
    """A verdict word on means that are no test: some side has fewer than two runs ({side: n})."""
    few = [k for k, n in ns.items() if n < 2]
    if len(few) == len(ns):
        return f"{word} on one run ({ONE_RUN})"
    return f"{word} on the means ({', '.join(few)}: one run; {ONE_RUN})"


def precondition(arms):
    """Per TTFT metric: default's mean against alone's. visible (default above alone by more than the larger
    std) is None when either has fewer than two runs; visible_point compares the means alone."""
    out = {}
    for key in ("steady_ttft_p99", "steady_ttft_p50", "burst_ttft_p50"):
        a, d = mean_of(arms, "alone", key), mean_of(arms, "default", key)
        ns = {"alone": n_of(arms, "alone", key), "default": n_of(arms, "default", key)}
        e = {"alone": a, "alone_std": std_of(arms, "alone", key),
             "default": d, "default_std": std_of(arms, "default", key), "ratio": None, "visible": None,
             "visible_point": None, "runs": ns, "verdict": "n/a"}
        if a is not None and d is not None:
            e["ratio"] = d / a if a > 0 else None
            e["ratio_ci95"] = ratio_ci(sub(arms, "default", key, "values") or [], sub(arms, "alone", key, "values") or [])
            e["visible_point"] = d > a
            if min(ns.values()) >= 2:
                # Visible: default's mean is above alone's by more than the larger of the two stds.
                e["visible"] = d - a > max(e["alone_std"], e["default_std"])
                e["verdict"] = "contention visible" if e["visible"] else "contention NOT visible"
            else:
                few = [k for k, n in ns.items() if n < 2]
                e["verdict"] = ("n/a (one run" if len(few) == len(ns) else f"n/a ({few[0]}: one run") + \
                    f"; {ONE_RUN})"
        out[key] = e
    return out


def ratio_ci(num_values, den_values, resamples=4000):
    """A 95% interval of mean(num) / mean(den): the runs of each side resampled with replacement (a seeded
    percentile bootstrap, so the report is the same each time); None with fewer than two runs on a side."""
    import random
    if len(num_values) < 2 or len(den_values) < 2:
        return None
    rng = random.Random(35)
    ratios = []
    for _ in range(resamples):
        n = [rng.choice(num_values) for _ in num_values]
        d = [rng.choice(den_values) for _ in den_values]
        md = math.fsum(d) / len(d)
        if md > 0:
            ratios.append(math.fsum(n) / len(n) / md)
    if len(ratios) < resamples / 2:
        return None
    ratios.sort()
    return [ratios[int(0.025 * (len(ratios) - 1))], ratios[int(0.975 * (len(ratios) - 1))]]


def operator_verdicts(arms, order, bench_spread=None):
    """What an operator decides by, on the means (None with fewer than two runs on a side: no spread):
    - best_static: the arm that switches nothing (default, scx_simple, latency, latency_q250, preempt,
      throughput) with the most
      goodput;
    - per switching arm, goodput against the best static arm's: a win when within one std of it or above;
    - default against akts's best arm an operator can run (by goodput; the oracle, told the phases, is not one):
      goodput, burst TTFT p50 and batch work, each saying which wins.
    With one run a side (the demo) and bench_spread ({arm: {key: relative std}}, the bench's), a gap within
    1.96 x the two single runs' combined spread (each arm's relative std from the bench times its value) is
    "inconclusive", not a win."""
    def g(a, k="goodput"):
        return mean_of(arms, a, k)
    statics = [a for a in STATIC if a in order and g(a) is not None]
    out = {"best_static": None, "switching": {}, "default_vs_akts": None}
    if statics:
        best = max(statics, key=g)
        out["best_static"] = {"arm": best, "goodput": g(best), "std": std_of(arms, best, "goodput"),
                              "runs": n_of(arms, best, "goodput")}
        for a in order:
            if a in NO_SWITCHING or g(a) is None:
                continue
            sd = std_of(arms, best, "goodput")
            point = g(a) >= g(best) - (sd or 0.0)
            both = min(n_of(arms, a, "goodput"), n_of(arms, best, "goodput")) >= 2
            out["switching"][a] = {"goodput": g(a), "std": std_of(arms, a, "goodput"), "runs": n_of(arms, a, "goodput"),
                                   "best_static": best, "win_point": point, "win": point if both else None}
    # akts's arms an operator can run: its static policies and its online controllers (not the oracle, which is
    # told the load's phases).
    akts = [a for a in order if a not in ("alone", "default", "scx_simple", "oracle") and g(a) is not None]
    if "default" in order and g("default") is not None and akts:
        best = max(akts, key=g)
        cmp = {}
        for key, higher in (("goodput", True), ("goodput_burst", True), ("goodput_steady", True),
                            ("burst_ttft_p50", False), ("batch_cpu_s", True)):
            d, b = mean_of(arms, "default", key), mean_of(arms, best, key)
            if d is None or b is None:
                continue
            sd = max(std_of(arms, "default", key) or 0.0, std_of(arms, best, key) or 0.0)
            spread = min(n_of(arms, "default", key), n_of(arms, best, key)) >= 2
            rel = [sub(bench_spread or {}, a, key) for a in ("default", best)]
            if spread and abs(d - b) <= sd:
                who = "within one std"
            elif not spread and None not in rel and abs(d - b) <= 1.96 * math.hypot(rel[0] * d, rel[1] * b):
                # One run a side: the gap of two single runs, each as spread as the bench found its arm, is real
                # only past about twice their combined spread (a 95% band).
                who = "inconclusive"
            else:
                who = "akts" if (b > d) == higher and b != d else "default" if b != d else "tie"
            cmp[key] = {"default": d, "akts": b, "winner": who, "spread": spread,
                        "bench_spread": None if None in rel else rel}
        out["default_vs_akts"] = {"akts_arm": best, "figures": cmp}
    return out


def write_spread(path, meta, arms):
    """Merges this experiment's relative spreads (sample std / mean over runs, arms with two runs or more) of the
    figures the demo's verdict reads into path, under the node's name."""
    try:
        with open(path) as f:
            allj = json.load(f)
        allj = allj if isinstance(allj, dict) else {}
    except (OSError, ValueError):
        allj = {}
    mine = {}
    for a, figs in arms.items():
        for key in ("goodput", "goodput_burst", "goodput_steady", "burst_ttft_p50", "batch_cpu_s"):
            d = figs.get(key)
            if not d or d["n"] < 2:
                continue
            if d["mean"]:
                mine.setdefault(a, {})[key] = round(d["std"] / abs(d["mean"]), 4)
            elif not d["std"]:  # 0 in every run: no spread (a gap from it is judged by the other side's alone)
                mine.setdefault(a, {})[key] = 0.0
    allj[meta.get("node") or "?"] = {"arms": mine, "runs": meta.get("runs"), "kernel": meta.get("kernel"),
                                     "written": datetime.now(timezone.utc).strftime("%Y-%m-%d")}
    try:
        with open(path, "w") as f:
            json.dump(allj, f, indent=1, sort_keys=True)
            f.write("\n")
    except OSError as e:
        print(f"report.py: cannot write {path}: {e}", file=sys.stderr)


def schedules(runs):
    """The load's schedule in each run (the load generator's seed, burstiness and arrivals' hash): {"same",
    "hash", "seed", "burstiness", "arrivals", "differs": [runs]}; None when no run had an open-loop schedule."""
    seen, none = {}, []
    for r in runs:
        sc = r.get("schedule") or {}
        if sc.get("hash"):
            seen.setdefault((sc.get("hash"), sc.get("seed"), sc.get("burstiness"), sc.get("arrivals")), []).append(r["name"])
        else:
            none.append(r["name"])
    if not seen:
        return None
    (h, seed, burst, n), names = max(seen.items(), key=lambda x: len(x[1]))
    differs = [name for key, ns in seen.items() if key[0] != h for name in ns] + none  # none: no schedule at all
    return {"same": not differs, "hash": h, "seed": seed, "burstiness": burst, "arrivals": n, "runs": len(names),
            "differs": differs}


def targets(arms, order, runs_by_arm):
    """Per switching arm: burst TTFT p50 against static latency's, batch CPU seconds against static
    throughput's. *_met is None when a side has fewer than two runs (no spread: not a test); *_met_point is
    the comparison of the means all the same. reasons: why the arm fell short, from its data."""
    lat_m, lat_s = mean_of(arms, "latency", "burst_ttft_p50"), std_of(arms, "latency", "burst_ttft_p50")
    tp = mean_of(arms, "throughput", "batch_cpu_s")
    out = {}
    for arm in order:
        if arm in NO_SWITCHING or not arms.get(arm):
            continue
        m = mean_of(arms, arm, "burst_ttft_p50")
        b = mean_of(arms, arm, "batch_cpu_s")
        ns_p = {arm: n_of(arms, arm, "burst_ttft_p50"), "latency": n_of(arms, "latency", "burst_ttft_p50")}
        ns_b = {arm: n_of(arms, arm, "batch_cpu_s"), "throughput": n_of(arms, "throughput", "batch_cpu_s")}
        t = {"burst_p50": m, "latency_burst_p50": lat_m, "latency_burst_p50_std": lat_s,
             "burst_p50_ratio": None, "burst_p50_met": None,
             "batch_cpu_s": b, "throughput_batch_cpu_s": tp, "batch_ratio": None, "batch_met": None,
             "runs": {"burst_p50": ns_p[arm], "latency": ns_p["latency"], "batch": ns_b[arm],
                      "throughput": ns_b["throughput"]},
             "burst_p50_met_point": None, "batch_met_point": None, "burst_p50_verdict": "n/a", "batch_verdict": "n/a",
             "oracle_offset_s": mean_of(arms, arm, "oracle_offset_s"),
             "oracle_offset_s_std": std_of(arms, arm, "oracle_offset_s"), "reasons": []}
        def judge(key, point, word_no, ns):
            # The comparison of means always; a verdict only when both sides have a spread (two runs or more).
            word = "met" if point else word_no
            t[key + "_met_point"] = point
            if min(ns.values()) >= 2:
                t[key + "_met"], t[key + "_verdict"] = point, word
            else:
                t[key + "_verdict"] = one_run_words(word, ns)

        if m is not None and lat_m is not None:
            t["burst_p50_ratio"] = m / lat_m if lat_m > 0 else None
            judge("burst_p50", m <= lat_m or (lat_s is not None and abs(m - lat_m) <= lat_s), "missed", ns_p)
        if b is not None and tp is not None and tp > 0:
            t["batch_ratio"] = b / tp
            judge("batch", t["batch_ratio"] >= BATCH_TARGET, "short", ns_b)
        t["reasons"] = reasons(arms, arm, t, runs_by_arm.get(arm, []))
        out[arm] = t
    return out


def reasons(arms, arm, t, runs):
    """Why a switching arm fell short of a target (on the means), from its data; [] when it did not."""
    burst_short, batch_short = t["burst_p50_met_point"] is False, t["batch_met_point"] is False
    if not (burst_short or batch_short):
        return []
    out = []
    sw = mean_of(arms, arm, "switches")
    if sw == 0:
        out.append("it never switched (stayed on its initial policy)")
    refused = sub(arms, arm, "refused", "values") or []
    if sum(refused) > 0:
        k = len(refused)
        n = sum(refused)
        from_log = bool(sub(arms, arm, "refused_from_log", "values"))
        out.append(("at least " if from_log else "") + f"{n:.0f} answer{'' if n == 1 else 's'} refused (not a filled slot)"
                   + (f" over {k} runs" if k > 1 else "")
                   + (" (counted in the decision log, which writes a repeated refusal once)" if from_log else ""))
    timed = sum(1 for r in runs if "latency_held_s" in r["metrics"])  # runs with decisions and a burst
    entered = n_of(arms, arm, "enter_latency_s")
    if burst_short and sw and timed:
        enter = mean_of(arms, arm, "enter_latency_s")
        never = f"{timed - entered} of {timed} runs" if timed > 1 else "the run"
        if not entered:
            out.append("it switched late or not at all in the burst (it never held latency in the burst)")
        elif enter > LATE_S or entered < timed:
            out.append("it switched late or not at all in the burst (it entered latency "
                       + (f"{enter:.1f} s after the burst began" if enter > 0 else f"{-enter:.1f} s before the burst")
                       + (f"; {never} never did" if entered < timed else "") + ")")
        else:
            share = mean_of(arms, arm, "burst_latency_share")
            if share is not None and share < 0.8:
                out.append(f"it held latency only {share:.0%} of the burst")
    if batch_short and timed:
        held = mean_of(arms, arm, "latency_held_s")
        leave = mean_of(arms, arm, "leave_latency_s")
        total = [r["bounds"][-1] for r in runs if "latency_held_s" in r["metrics"]]
        if held:
            out.append(f"it held latency {held:.1f} s of the load's {statistics.mean(total):.0f} s "
                       "(the antagonists get little CPU there)")
        if leave is not None and leave > LATE_S:
            out.append(f"it left latency {leave:.1f} s after the burst ended")
    return out


def reaction_table(arms, order, runs_by_arm):
    """Per switching arm: the reaction metrics' statistics and how many runs had decisions, entered latency in
    the burst and left it before the load ended."""
    out = {}
    for arm in order:
        if arm in NO_SWITCHING or not runs_by_arm.get(arm):
            continue
        timed = sum(1 for r in runs_by_arm[arm] if "latency_held_s" in r["metrics"])
        e = {k: arms[arm].get(k) or describe([], []) for k in
             ("enter_latency_s", "leave_latency_s", "burst_latency_share", "latency_held_s")}
        e.update({"runs": len(runs_by_arm[arm]), "timed": timed, "entered": e["enter_latency_s"]["n"],
                  "left": e["leave_latency_s"]["n"]})
        out[arm] = e
    return out


def caveats(arms, order, all_runs, meta):
    """What makes figures less comparable, per arm: less work per batch CPU second than the median arm, a busy
    apparatus CPU; per run: fewer antagonist workers captured than started."""
    out = []
    wm = {a: mean_of(arms, a, "work_per_cpu_s") for a in order}
    wm = {a: v for a, v in wm.items() if v is not None}
    if len(wm) >= 2:
        med = statistics.median(wm.values())
        for a, v in wm.items():
            if med > 0 and v < (1 - WORK_DROP) * med:
                out.append({"arm": a, "kind": "work_per_cpu_s", "value": v, "median": med,
                            "text": f"{a}: its batch CPU seconds did {1 - v / med:.0%} less work each than the "
                                    "median arm's (TCG: a busy apparatus vCPU slows the measured one); compare its "
                                    "batch work with care"})
        for r in all_runs:
            v = r["metrics"].get("work_per_cpu_s")
            if v is not None and med > 0 and v < (1 - WORK_DROP) * med and (wm.get(r["arm"]) or 0) >= (1 - WORK_DROP) * med:
                out.append({"arm": r["arm"], "run": r["run"], "kind": "work_per_cpu_s_run", "value": v, "median": med,
                            "text": f"{r['name']}: its batch CPU seconds did {1 - v / med:.0%} less work each than the "
                                    "median arm's (its arm's mean did not)"})
    for a in order:
        e = mean_of(arms, a, "steady_empty_phases")
        if e:
            out.append({"arm": a, "kind": "steady_empty_phases", "value": e,
                        "text": f"{a}: {e:.1f} steady phase(s) a run finished no request (every one failed or went "
                                "unanswered; goodput counts them as misses): its steady TTFT figures stand on the "
                                "other phase"})
    for a in order:
        busy = mean_of(arms, a, "apparatus_busy")
        if busy is not None and busy > BUSY_APPARATUS:
            shared = ("the stand-in and the load generator shared it, so the stand-in queued and client-side TTFT "
                      "is inflated" if meta.get("node") in ("gpu", "gpu-hostwork") else
                      "the load generator shared it, so client-side TTFT is inflated")
            out.append({"arm": a, "kind": "apparatus_busy", "value": busy,
                        "text": f"{a}: the apparatus CPU was {busy:.0%} busy: {shared}"})
    want = num(meta.get("antagonists"))
    for r in all_runs:
        w = r["metrics"].get("workers")
        if w is not None and want is not None and w < want and r["arm_json"].get("antagonists") is not False:
            out.append({"arm": r["arm"], "run": r["run"], "kind": "workers", "value": w,
                        "text": f"{r['name']}: {w:.0f} of {want:.0f} antagonist workers captured: its batch CPU "
                                "seconds undercount"})
    return out


def parse_duration_ms(text):
    """"6s", "800ms", "250us" in milliseconds; None for anything else (the daemon's objective takes these)."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(us|ms|s)", str(text or "").strip())
    return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)] if m else None


def calibration(arms, meta):
    """The fixed arms against the calibration's targets (means; a verdict word only with two runs a side):
    contention, latency's cost in batch work, throughput's cost in the burst, and the objective's ceiling
    (static throughput meets it in the steady phases and misses it in the burst)."""
    def m(a, k):
        return mean_of(arms, a, k)

    def n(*pairs):
        return min(n_of(arms, a, k) for a, k in pairs)

    out = []

    def add(name, value, shown, ok, runs, target):
        out.append({"target": name, "value": value, "shown": shown, "target_text": target,
                    "met_point": ok, "runs": runs, "verdict": "n/a" if ok is None else
                    ("met" if ok else "missed") + ("" if runs >= 2 else f" on one run ({ONE_RUN})")})

    # (target, key, numerator arm, denominator arm, the figure from the two means, its format, the test, the text)
    for name, key, top, bottom, figure, fmt, test, text in (
            ("contention", "steady_ttft_p99", "default", "alone", lambda t, b: t / b, "{:.2f}x",
             lambda r: r >= CONTENTION_MIN, f"default's steady TTFT p99 at least {CONTENTION_MIN:g}x alone's"),
            ("latency_batch", "batch_cpu_s", "latency", "throughput", lambda t, b: t / b, "{:.1%}",
             lambda r: LATENCY_BATCH[0] <= r <= LATENCY_BATCH[1],
             f"static latency keeps {LATENCY_BATCH[0]:.0%}-{LATENCY_BATCH[1]:.0%} of static throughput's batch work"),
            ("burst_slower", "burst_ttft_p50", "throughput", "latency", lambda t, b: t / b, "{:.2f}x",
             lambda r: r >= BURST_SLOWER_MIN, f"static throughput's burst TTFT p50 at least {BURST_SLOWER_MIN:g}x latency's"),
            ("burst_fewer", "burst_served", "throughput", "latency", lambda t, b: 1 - t / b, "{:.0%} fewer",
             lambda r: r >= BURST_FEWER_MIN, f"static throughput serves at least {BURST_FEWER_MIN:.0%} fewer burst requests")):
        t, b = m(top, key), m(bottom, key)
        r = figure(t, b) if b and t is not None else None
        add(name, r, fmt.format(r) if r is not None else "n/a", None if r is None else test(r),
            n((top, key), (bottom, key)), text)
    ceiling = parse_duration_ms(meta.get("objective_max"))
    sp, bp = m("throughput", "steady_ttft_p99"), m("throughput", "burst_ttft_p99")
    empty = m("throughput", "steady_empty_phases") or 0
    # A steady phase that served nothing is no steady phase within the ceiling.
    ok = None if ceiling is None or sp is None or bp is None else sp <= ceiling < bp and not empty
    add("objective", ceiling, (f"ceiling {ceiling:g} ms: throughput's steady p99 {fnum(sp)} ms, burst p99 "
                               f"{fnum(bp)} ms" + (f"; {empty:.1f} of its steady phases a run served no request"
                                                   if empty else "")) if ceiling is not None and sp is not None
        and bp is not None else "n/a", ok, n(("throughput", "steady_ttft_p99"), ("throughput", "burst_ttft_p99")),
        "under static throughput, steady TTFT p99 within the objective's ceiling and burst TTFT p99 above it")
    return out


def standin(arms, order):
    """The GPU node's like-for-like check: per figure, the arms whose mean differs from the median arm's by
    more than STANDIN_SPREAD (scx_simple schedules the stand-in itself: it is named, not left out). Per request,
    not the busy share, which follows how many requests an arm served."""
    out = []
    for key, what in (("standin_ms_per_req", "the stand-in's CPU time per request"),
                      ("standin_runq_ms_per_req", "the stand-in's time queued on the apparatus CPU per request"),
                      ("server_ms_per_req", "llama-server's CPU time per request")):
        vals = {a: mean_of(arms, a, key) for a in order}
        vals = {a: v for a, v in vals.items() if v is not None}
        if len(vals) < 2:
            continue
        med = statistics.median(vals.values())
        for a, v in vals.items():
            if med > 0 and abs(v - med) > STANDIN_SPREAD * med:
                out.append({"arm": a, "key": key, "value": v, "median": med,
                            "text": f"{a}: {what} was {v / med - 1:+.0%} against the median arm's"})
    return out


def claim(tg):
    """The paper's claim: the oracle and at least one online (switching, not oracle) arm meet both targets.
    reproduced: True/False, None when the runs cannot tell (a side with one run); point: on the means."""
    def both(t, suffix):
        a, b = t[f"burst_p50_met{suffix}"], t[f"batch_met{suffix}"]
        return False if a is False or b is False else True if a and b else None

    online = [a for a in tg if a != "oracle"]
    res = {"oracle": None, "online": online, "reproduced": None, "point": None,
           "burst_met": [a for a, t in tg.items() if t["burst_p50_met_point"]],
           "batch_met": [a for a, t in tg.items() if t["batch_met_point"]],
           "both_met": [a for a, t in tg.items() if both(t, "_point")]}
    if "oracle" not in tg or not online:
        res["text"] = ("not tested here (" + ("no oracle run" if "oracle" not in tg else "no online arm's run")
                       + ")")
        return res
    res["oracle"] = {"both_met": both(tg["oracle"], ""), "both_met_point": both(tg["oracle"], "_point")}
    for suffix, key in (("", "reproduced"), ("_point", "point")):
        o = both(tg["oracle"], suffix)
        on = [both(tg[a], suffix) for a in online]
        res[key] = (True if o and any(on) else False if o is False or all(x is False for x in on) else None)
    met = (f"burst TTFT met by {', '.join(res['burst_met']) or 'none'}; batch met by "
           f"{', '.join(res['batch_met']) or 'none'}; both by {', '.join(res['both_met']) or 'none'}")
    if res["reproduced"] is not None:
        res["text"] = ("reproduced here" if res["reproduced"] else "not reproduced here") + f" ({met})"
    else:
        pt = {True: "reproduced", False: "not reproduced", None: "undecided"}[res["point"]]
        ones = {n for t in tg.values() for n in t["runs"].values()}
        why = "one run per arm" if ones <= {0, 1} else "an arm with one run"
        res["text"] = f"not tested here ({why}: no spread); on the means it is {pt} ({met})"
    return res


# --- text ------------------------------------------------------------------

def fnum(x, ref=None, count=False):
    """x with 0 to 2 decimals, by the magnitude of ref (default x); counts: whole ones without decimals."""
    r = abs(ref if ref is not None else x)
    if count and float(x).is_integer():
        return "%d" % x
    if r >= 100:
        return "%.0f" % x
    if r >= 10 or count:
        return "%.1f" % x
    return "%.2f" % x


def metric_factor(key):
    return METRICS[key][2] if key in METRICS else 1


COUNTS = {"steady_served", "steady_empty_phases", "burst_served", "burst_failed", "switches", "bogo_ops", "workers",
          "refused", "unanswered", "sent"}


def cell(s, key, row_n=0):
    """ "mean ± std"; the value alone for one run; "(n=k)" after it when fewer runs than its row's n had it."""
    if not s or s["n"] == 0:
        return "-"
    f, c = metric_factor(key), key in COUNTS
    fewer = f" (n={s['n']})" if s["n"] < row_n else ""
    if s["n"] == 1:
        return fnum(s["mean"] * f, count=c) + fewer
    return f"{fnum(s['mean'] * f, count=c)} ± {fnum(s['std'] * f, s['mean'] * f, count=c)}{fewer}"


def ci_cell(s, key):
    if not s or s["n"] == 0:
        return "-"
    if s["ci95"] is None:
        return "(n=1)"
    f, c = metric_factor(key), key in COUNTS
    lo, hi = s["ci95"]
    return f"[{fnum(lo * f, s['mean'] * f, c)}, {fnum(hi * f, s['mean'] * f, c)}]"


def table(headers, rows):
    """Columns: the first left-aligned, the others right-aligned; headers are (line 1, line 2)."""
    widths = [max([len(h[0]), len(h[1])] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lines = []
    for j in range(2):
        lines.append("  ".join(h[j].ljust(w) if i == 0 else h[j].rjust(w)
                               for i, (h, w) in enumerate(zip(headers, widths))).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def batch_phase_header(key):
    k, _, name = key[len(BATCH_PHASE):].partition("_")
    return (f"batch {name}", f"#{k} (CPU s)")


def ms(m, s, n, unit="ms"):
    """mean±std and the unit; the mean alone with one run (the verdict says so)."""
    if m is None:
        return "-"
    return f"{fnum(m)} {unit}" if n == 1 or s is None else f"{fnum(m)}±{fnum(s, m)} {unit}"


def wrap(text, indent="  ", more="    "):
    return textwrap.wrap(text, 118, initial_indent=indent, subsequent_indent=more, break_on_hyphens=False)


def reaction_cell(s, key, of):
    """A reaction figure: "-" when no run did it; "(k of n)" when fewer runs than `of` did."""
    if not s or s["n"] == 0:
        return "-"
    return cell(s, key) + (f" ({s['n']} of {of})" if s["n"] < of else "")


def operator_text(meta, summary, order, main, row_n, brief):
    """The operator's view: the load and its limits, goodput and the latencies per arm (default's row beside
    akts's), the oracle's lag, and who wins."""
    arms, lines = summary["arms"], []
    if not any(arms[a].get("goodput") for a in order):
        return lines
    cal = meta.get("calibration") or {}
    sl = cal.get("slo") or {}
    limits = ", ".join(x for x in (f"TTFT <= {sl['ttft']}" if sl.get("ttft") else "",
                                   f"TPOT <= {sl['tpot']}" if sl.get("tpot") else "") if x)
    meas = cal.get("measured") or {}
    how = meas.get("from", "")
    if (cal.get("slo_given") or {}).get("ttft"):
        how = "given, not measured"
    lines += wrap(f"Objective: {limits or '?'} ({how})", indent="")
    if cal.get("capacity_rps"):
        lines += wrap(f"Load: {cal.get('load_phases')} (from {cal.get('phases')}: x the capacity alone, "
                      f"{cal['capacity_rps']:.2f} requests/s, {cal.get('capacity_from')})", indent="")
    sc = summary.get("schedule")
    if sc:
        same = "the same in every run" if sc["same"] else f"DIFFERS in {', '.join(sc['differs'][:6])}"
        lines += wrap(f"Schedule: {sc['arrivals']} arrivals, seed {sc['seed']}, burstiness {sc['burstiness']:g}, "
                      f"hash {sc['hash']}: {same}", indent="")
    lines.append("")
    lines.append("Goodput under the objective (requests a second that met every limit; a failed or unanswered "
                 "request never does): mean ± sample std")
    hdr = [("arm", ""), ("", "n")] + [METRICS[k][:2] for k in GOODPUT]
    lines.append(table(hdr, [[a, str(row_n(a))] + [cell(arms[a].get(k), k, row_n(a)) for k in GOODPUT] for a in main]))
    if not brief and any(s["n"] > 1 for a in main for s in arms[a].values()):
        lines.append("95% confidence intervals of the mean (Student's t)")
        lines.append(table(hdr, [[a, str(row_n(a))] + [ci_cell(arms[a].get(k), k) for k in GOODPUT] for a in main]))
    if not brief:
        lines.append("")
        lines.append("Latencies over the whole load (completed requests): mean ± sample std")
        hdr = [("arm", "")] + [METRICS[k][:2] for k in LATENCIES]
        lines.append(table(hdr, [[a] + [cell(arms[a].get(k), k, row_n(a)) for k in LATENCIES] for a in order]))
    lags = summary.get("oracle_lags") or []
    if lags:
        vals = [x["lag_ms"] for x in lags]
        worst = "never switched at " + ", ".join(f"{x['run']} phase {x['phase']}" for x in lags if x["lag_ms"] is None) \
            if None in vals else f"at most {max(vals):.0f} ms"
        ok = None not in vals and max(vals) < ORACLE_LAG_MAX_MS
        med = pct([v for v in vals if v is not None], 50)
        lines += wrap(f"The oracle's lag behind the phase boundaries (the load generator says each phase as it "
                      f"begins): {len(lags)} boundaries, {worst}, median "
                      f"{'n/a' if med is None else '%.0f ms' % med}: "
                      f"{'under' if ok else 'NOT under'} {ORACLE_LAG_MAX_MS} ms in every run", indent="")
    op = summary.get("operator") or {}
    bs = op.get("best_static")
    if bs:
        lines.append("")
        lines += wrap(f"Best static arm by goodput: {bs['arm']} ({ms(bs['goodput'], bs['std'], bs['runs'], 'req/s')}). "
                      "A switching arm wins only with goodput within one std of it, or above:", indent="")
        for a, v in op["switching"].items():
            word = ("wins" if v["win_point"] else "loses") + ("" if v["win"] is not None else
                                                                f" on the means ({ONE_RUN})")
            lines += wrap(f"{a}: {ms(v['goodput'], v['std'], v['runs'], 'req/s')}: {word}")
    dv = op.get("default_vs_akts")
    if dv:
        lines += wrap(f"The kernel's default against akts's best arm by goodput ({dv['akts_arm']}):", indent="")
        names = {"goodput": "goodput", "goodput_burst": "burst goodput", "goodput_steady": "steady goodput",
                 "burst_ttft_p50": "burst TTFT p50", "batch_cpu_s": "batch work"}
        for key, c in dv["figures"].items():
            unit = "ms" if key == "burst_ttft_p50" else "CPU s" if key == "batch_cpu_s" else "req/s"
            win = {"default": "the default wins", "akts": "akts wins", "within one std": "within one std",
                   "tie": "a tie", "inconclusive": "inconclusive"}[c["winner"]]
            why = "" if c["spread"] else \
                f" (one run: the gap against the bench's spread, {c['bench_spread'][0]:.0%} and " \
                f"{c['bench_spread'][1]:.0%})" if c.get("bench_spread") else f" ({ONE_RUN})"
            lines += wrap(f"{names[key]}: default {fnum(c['default'])} {unit}, {dv['akts_arm']} {fnum(c['akts'])} "
                          f"{unit}: {win}{why}")
        g = dv["figures"].get("goodput")
        if g:
            verdict = {"akts": f"better with akts ({dv['akts_arm']})", "default": "better with the kernel's default",
                       "within one std": "no better either way (within one std)", "tie": "no better either way",
                       "inconclusive": "inconclusive (the gap is within the bench's spread)"}[g["winner"]]
            once = "" if g["spread"] else \
                " (one run a side, judged against the bench's spread, serving/spread.json)" if g.get("bench_spread") \
                else f" ({ONE_RUN}: ./akts bench serving measures the spread)"
            lines += wrap(f"Verdict: by goodput, this node is {verdict}{once}.", indent="")
    lines.append("")
    return lines


def text_report(out, meta, summary, order, plots, first_phases, brief=False):
    arms = summary["arms"]
    lines = []
    head = f"Serving experiment {os.path.abspath(out)}"
    bits = [f"kernel {meta['kernel']}" if meta.get("kernel") else "",
            f"measured CPUs {meta['measured_cpus']}" if meta.get("measured_cpus") is not None else "",
            f"apparatus CPUs {meta['apparatus_cpus']}" if meta.get("apparatus_cpus") is not None else ""]
    bits = [b for b in bits if b]
    lines.append(head + (f" ({', '.join(bits)})" if bits else ""))
    phases = meta.get("phases") or (first_phases + " (from load.json)" if first_phases else "?")
    planned = f"{meta['runs']} run{'s' if meta['runs'] != 1 else ''} per arm planned; " if meta.get("runs") else ""
    lines.append(f"phases {phases}; {planned}{len(summary['runs'])} runs complete, "
                 f"{len(summary['incomplete'])} incomplete")
    node = meta.get("node")
    if node:
        what = {"gpu": "GPU-shaped: the model's layers on ggml-rpc-server (the accelerator's stand-in) on the "
                       "apparatus CPU, the serving path on the measured CPU; akts in partial mode",
                "gpu-hostwork": "GPU-shaped with host work: part of the model's layers on ggml-rpc-server (the "
                                "stand-in) on the apparatus CPU, the rest and the serving path on the measured CPU, "
                                "as a serving engine's per-token CPU work; akts in partial mode",
                "cpu": "CPU-bound: llama-server computes the model on the measured CPU; akts manages every task"}
        bits = [what.get(node, node)]
        if meta.get("antagonists") is not None:
            bits.append(f"{meta['antagonists']} hog{'s' if meta['antagonists'] != 1 else ''}")
        if meta.get("model_shape"):
            bits.append(f"model {meta['model_shape']}")
        if meta.get("offloaded"):
            bits.append(meta["offloaded"])
        if meta.get("objective_max"):
            bits.append(f"objective TTFT p99 <= {meta['objective_max']}")
        lines += wrap(f"node: {node} ({'; '.join(bits)})", indent="")
    if isinstance(meta.get("versions"), dict) and meta["versions"]:
        lines += wrap("versions: " + ", ".join(f"{k} {v}" for k, v in sorted(meta["versions"].items())), indent="")
    lines.append("")

    main = [a for a in order if a != "alone"]

    def row_n(a):  # the complete runs of an arm
        return sum(1 for r in summary["runs"] if r["arm"] == a)

    lines += operator_text(meta, summary, order, main, row_n, brief)

    hdr = [("arm", ""), ("", "n")] + [METRICS[k][:2] for k in TABLE2]
    lines.append("Table 2: mean ± sample std over runs")
    lines.append(table(hdr, [[a, str(row_n(a))] + [cell(arms[a].get(k), k, row_n(a)) for k in TABLE2]
                             for a in main]))
    bw = summary["batch_window"]
    span = "/".join(f"{x:g}" for x in bw["seconds"]) or "?"
    lines += wrap(f"batch: the antagonists' CPU seconds over the load's phases only, started_unix to +{span} s (the "
                  "sum of the phases' durations), interpolated in batch.tsv"
                  + (f"; from arm.json's whole bracket for {len(bw['from_arm_json'])} run(s) without a usable "
                     f"batch.tsv: {', '.join(bw['from_arm_json'][:6])}" if bw["from_arm_json"] else ""), indent="")
    lines.append("")
    if brief:  # Table 2, the targets and the verdict only (the demo)
        pass
    elif any(s["n"] > 1 for a in main for s in arms[a].values()):
        lines.append("95% confidence intervals of the mean (Student's t; none with one run)")
        lines.append(table(hdr, [[a, str(row_n(a))] + [ci_cell(arms[a].get(k), k) for k in TABLE2] for a in main]))
    else:
        lines.append("95% confidence intervals: none (one run per arm)")

    per_phase = sorted({k for a in order for k in arms[a] if k.startswith(BATCH_PHASE)},
                       key=lambda k: int(k[len(BATCH_PHASE):].partition("_")[0]))
    for title, keys in () if brief else (("Batch work per phase (batch.tsv at the phase boundaries: they sum to Table 2's batch), "
                         "arm.json's whole bracket (the load generator's start-up and tail included) and burst "
                         "failures", per_phase + ["batch_cpu_s_arm", "burst_failed"]),
                        ("The steady user beyond TTFT: steady requests finished and their end-to-end latency (the "
                         "objective is TTFT alone)", ["steady_ttft_p50", "steady_served", "steady_e2el_p50", "steady_empty_phases"]),
                        ("Batch work per CPU second (stress-ng over its lifetime: bogo ops / its usr+sys CPU "
                         "seconds) and the antagonist workers captured",
                         ["bogo_ops", "stress_cpu_s", "work_per_cpu_s", "workers"]),
                        ("The apparatus: CPU busy shares over the load (/proc/stat) and CPU seconds",
                         ["measured_busy", "apparatus_busy", "loadgen_cpu_s", "daemon_cpu_s", "llm_server_cpu_s"]),
                        ("Like for like (the GPU node): the stand-in's busy share over the load, its CPU time and "
                         "its time queued on the apparatus CPU per request sent, and llama-server's CPU time per "
                         "request on the measured CPU",
                         ["standin_busy", "standin_ms_per_req", "standin_runq_ms_per_req", "server_ms_per_req"])):
        keys = [k for k in keys if any(sub(arms, a, k, "n") for a in order)]
        if keys:
            lines.append("")
            lines += wrap(title + ": mean ± sample std", indent="")
            hdr = [("arm", "")] + [batch_phase_header(k) if k.startswith(BATCH_PHASE) else METRICS[k][:2] for k in keys]
            lines.append(table(hdr, [[a] + [cell(arms[a].get(k), k, row_n(a)) for k in keys] for a in order]))

    pre = summary["precondition"]
    show_pre = not (brief and "alone" not in order)  # the demo runs no alone arm
    if show_pre:
        lines.append("")
        lines.append("Precondition (alone: no antagonists; default: antagonists, default scheduler):")
    for key, label in (("steady_ttft_p99", "steady TTFT p99"), ("steady_ttft_p50", "steady TTFT p50"),
                       ("burst_ttft_p50", "burst TTFT p50")) if show_pre else ():
        e = pre[key]
        if e["alone"] is None or e["default"] is None:
            missing = " or ".join(x for x in ("alone", "default") if e[x] is None)
            lines.append(f"  {label}: n/a (no {missing} figure)")
            continue
        ratio = f" ({e['ratio']:.2f}x" + (f", 95% interval {e['ratio_ci95'][0]:.2f}-{e['ratio_ci95'][1]:.2f}x"
                                          if e.get("ratio_ci95") else "") + ")" if e["ratio"] is not None else ""
        lines += wrap(f"{label}: alone {ms(e['alone'], e['alone_std'], e['runs']['alone'])}, "
                      f"default {ms(e['default'], e['default_std'], e['runs']['default'])}{ratio}: {e['verdict']}")

    if summary.get("standin") and not brief:
        lines.append("")
        lines += wrap(f"The stand-in's figures differing by more than {STANDIN_SPREAD:.0%} from the median arm's "
                      "(scx_simple schedules the stand-in too):", indent="")
        for e in summary["standin"]:
            lines += wrap(e["text"])
    cal = summary.get("calibration") or []
    if cal and not brief and any(c["value"] is not None for c in cal if c["target"] != "objective"):
        lines.append("")
        lines.append("Calibration targets on the fixed arms (reported, not asserted; means):")
        for c in cal:
            lines += wrap(f"{c['target_text']}: {c['shown']}: {c['verdict']}")

    if lines[-1] != "":
        lines.append("")
    lines.append("Targets (reported, not asserted): burst TTFT p50 within one std of static latency's (or below); "
                 f"batch work >= {BATCH_TARGET:.0%}")
    lines.append("of static throughput's. With one run on a side there is no spread: the means are shown, no test.")
    tg = summary["targets"]
    if not tg:
        lines.append("  no switching arm with a complete run")
    for arm, t in tg.items():
        off = ""
        if t["oracle_offset_s"] is not None:
            o, os_ = t["oracle_offset_s"], t["oracle_offset_s_std"]
            amount = f"{fnum(abs(o))}±{fnum(os_, o)} s" if os_ is not None else f"{fnum(abs(o))} s"
            off = f" (schedule started {amount} {'before' if o < 0 else 'after'} the load)"
        lines.append(f"  {arm}{off}:")
        if t["burst_p50"] is None:
            p = "burst TTFT p50 n/a"
        elif t["latency_burst_p50"] is None:
            p = f"burst TTFT p50 {fnum(t['burst_p50'])} ms vs latency n/a"
        elif t["burst_p50_ratio"] is None:
            p = f"burst TTFT p50 {fnum(t['burst_p50'])} ms: n/a"
        else:
            mine = ms(t["burst_p50"], std_of(arms, arm, "burst_ttft_p50"), t["runs"]["burst_p50"])
            lat = ms(t["latency_burst_p50"], t["latency_burst_p50_std"], t["runs"]["latency"])
            p = f"burst TTFT p50 {mine} vs latency {lat} ({t['burst_p50_ratio']:.2f}x): {t['burst_p50_verdict']}"
        if t["batch_ratio"] is None:
            b = "batch n/a" + (" (no throughput figure)" if t["throughput_batch_cpu_s"] is None else "")
        else:
            mine = ms(t["batch_cpu_s"], std_of(arms, arm, "batch_cpu_s"), t["runs"]["batch"], "CPU s")
            tp = ms(t["throughput_batch_cpu_s"], std_of(arms, "throughput", "batch_cpu_s"), t["runs"]["throughput"],
                    "CPU s")
            b = f"batch {mine} vs throughput {tp} ({t['batch_ratio']:.0%}): {t['batch_verdict']}"
        lines += wrap(p, "    ", "      ")
        lines += wrap(b, "    ", "      ")
        if t["reasons"]:
            lines += wrap("why: " + "; ".join(t["reasons"]), "    ", "      ")
    cl = summary["claim"]
    lines.append("")
    lines += wrap("The paper's claim (the oracle and at least one online arm meet both targets): " + cl["text"],
                  indent="")

    rt = summary["reaction"]
    if rt and not brief:
        lines.append("")
        lines += wrap("Reaction to the burst (switching arms; the policy from decisions.jsonl): entering latency, s "
                      "after the burst began; leaving it, s after the burst ended (negative: before; -: never; "
                      "k of n: only k runs did): mean ± sample std", indent="")
        hdr = [("arm", ""), ("runs with", "decisions"), ("enter latency", "(s after start)"),
               ("leave latency", "(s after end)"), METRICS["burst_latency_share"][:2], ("latency held", "(s)")]
        rows = []
        for arm, e in rt.items():
            rows.append([arm, f"{e['timed']} of {e['runs']}" if e["timed"] < e["runs"] else str(e["runs"]),
                         reaction_cell(e["enter_latency_s"], "enter_latency_s", e["timed"]),
                         reaction_cell(e["leave_latency_s"], "leave_latency_s", e["timed"]),
                         reaction_cell(e["burst_latency_share"], "burst_latency_share", e["timed"]),
                         reaction_cell(e["latency_held_s"], "latency_held_s", e["timed"])])
        lines.append(table(hdr, rows))

    if summary["caveats"]:
        lines.append("")
        lines.append("Caveats:")
        for c in summary["caveats"]:
            lines += wrap(c["text"])

    if summary["incomplete"]:
        lines.append("")
        lines.append("Incomplete runs (left out of the statistics):")
        for e in summary["incomplete"]:
            lines += wrap(f"{e['run']}: incomplete: {e['why']}")
    if summary["notes"]:
        lines.append("")
        lines.append("Notes:")
        for n in summary["notes"]:
            lines += wrap(n)
    if plots:
        lines.append("")
        lines.append("Plots: " + ", ".join(plots))
    return "\n".join(lines)


# --- plots -----------------------------------------------------------------

POLICY_COLORS = {"latency": "#ff7f0e", "throughput": "#2ca02c", "default (EEVDF)": "#bdbdbd",
                 "scx_simple": "#8c6d31"}
PHASE_COLORS = {"steady": "#1f77b4", "burst": "#9467bd"}


def policy_style(p, i):
    """Patch keywords for policy p (the i-th seen): its color; UNKNOWN grey and hatched."""
    if p == UNKNOWN:
        return {"facecolor": "#e8e8e8", "edgecolor": "#888888", "hatch": "////"}
    return {"color": POLICY_COLORS.get(p, f"C{5 + i % 5}")}


def arm_color(arm):
    return {"alone": "#d9d9d9", "default": "#969696", "scx_simple": "#8c6d31",
            "latency": "#ff7f0e", "throughput": "#2ca02c"}.get(arm, "#1f77b4")


def decision_segments(r, t_end):
    """[(t0, t1, policy)] over [0, t_end] s from the load's start, from the decisions (selected_after, else an
    applied decision's proposed slot, through the slots); None without decisions or started_unix."""
    def slot(d):
        i = d.get("selected_after")
        if (isinstance(i, bool) or not isinstance(i, int)) and d.get("applied") is True:
            i = d.get("proposed")
        if isinstance(i, bool) or not isinstance(i, int):
            return None
        return r["slots"][i] if 0 <= i < len(r["slots"]) and isinstance(r["slots"][i], str) else f"slot {i}"

    decs = [(t, slot(d)) for t, d in (r["decisions"] or [])]
    decs = [(t, p) for t, p in decs if p is not None]
    if not decs or r["started"] is None:
        return None
    rel = [(t - r["started"], p) for t, p in decs]
    before = [p for t, p in rel if t <= 0]
    cur, t0, segs = (before[-1] if before else (r["initial"] or "initial")), 0.0, []
    for t, p in rel:
        if 0 < t < t_end and p != cur:
            segs.append((t0, t, cur))
            cur, t0 = p, t
    segs.append((t0, t_end, cur))
    return segs


UNKNOWN = "unknown"


def policy_segments(r, t_end):
    """[(t0, t1, policy)] over [0, t_end] s from the load's start, and a note when it cannot be placed.
    Without decisions: an akts arm's initial policy only when arm.json's attach check says akts was attached
    (else UNKNOWN: the config alone says nothing of what ran); an arm without akts: its label (what the
    harness set up; UNKNOWN when its attach check says otherwise)."""
    segs = decision_segments(r, t_end)
    if segs is not None:
        return segs, None
    if r["decisions"] and r["started"] is None:
        return [], "policy times unknown (load.json has no started_unix)"
    att = r["attach"] or {}
    attached = att.get("ok") is True
    if r["label"] is not None and not r["slots"]:
        name = r["label"] if (not att or attached and att.get("expected") != "akts") else UNKNOWN
    else:
        name = (r["initial"] or "initial") if attached and att.get("expected") == "akts" else UNKNOWN
    return [(0.0, t_end, name)], None


def plot_timeline(path, order, runs_by_arm, plt):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    shown = [(a, runs_by_arm[a][0]) for a in order if runs_by_arm.get(a)]
    height = 1.5 + 2.0 * len(shown)
    fig, axes = plt.subplots(len(shown), 1, figsize=(13, height), sharex=True, sharey=True, squeeze=False)
    axes = [row[0] for row in axes]
    ttfts = [x for _, r in shown for x in (num(q.get("ttft_ms")) for q in r["requests"] if q.get("ok") is True)
             if x is not None and x > 0]
    log = bool(ttfts) and max(ttfts) / min(ttfts) > 20
    policies, phase_names, rate_max, twins = [], [], 1.05, []
    any_failed = any_rate = False
    for ax, (arm, r) in zip(axes, shown):
        trans = blended_transform_factory(ax.transData, ax.transAxes)
        t_end = max([r["bounds"][-1], num(r["load"].get("elapsed_s")) or 0.0])
        for k, p in enumerate(r["phases"]):
            a, b = r["bounds"][k], r["bounds"][k + 1]
            ax.axvspan(a, b, color="#eeeeee" if k % 2 == 0 else "white", zorder=0)
            ax.text(a + 0.1, 0.86, str(p.get("name", "?")), transform=trans, fontsize=7, va="top", color="#555555")
        # TTFT points by phase; failures as red x along the bottom at their end time.
        by_phase = {}
        for q in r["requests"]:
            start = num(q.get("start_s"))
            if start is None:
                continue
            if q.get("ok") is True:
                t = num(q.get("ttft_ms"))
                if t is not None and t > 0:
                    by_phase.setdefault(str(q.get("phase_name", "?")), []).append((start + t / 1000, t))
            else:
                e = num(q.get("e2el_ms")) or 0.0
                ax.plot(start + e / 1000, 0.05, "x", color="red", markersize=5, transform=trans, zorder=4)
                any_failed = True
        for ph, pts in sorted(by_phase.items()):
            if ph not in phase_names:
                phase_names.append(ph)
            ax.scatter([x for x, _ in pts], [y for _, y in pts], s=9, zorder=3,
                       color=PHASE_COLORS.get(ph, f"C{3 + phase_names.index(ph)}"))
        segs, note = policy_segments(r, t_end)
        for a, b, p in segs:
            if p not in policies:
                policies.append(p)
            ax.axvspan(a, b, ymin=0.92, ymax=1.0, zorder=2, linewidth=0, **policy_style(p, policies.index(p)))
        if note:
            ax.text(0.99, 0.96, note, transform=ax.transAxes, fontsize=7, ha="right", va="center", color="#aa0000")
        # The antagonists' CPU rate (CPU s per s), from batch.tsv.
        if r["batch"] and r["started"] is not None:
            xs, ys = [], []
            for (t0, c0), (t1, c1) in zip(r["batch"], r["batch"][1:]):
                if t1 > t0:
                    xs.append((t0 + t1) / 2 - r["started"])
                    ys.append((c1 - c0) / (t1 - t0))
            if xs:
                tw = ax.twinx()
                tw.plot(xs, ys, color="#444444", linewidth=0.8, alpha=0.7)
                tw.set_ylabel("batch CPU s/s", fontsize=7, color="#444444")
                tw.tick_params(labelsize=7, colors="#444444")
                rate_max = max(rate_max, max(ys) * 1.1)
                twins.append(tw)
                any_rate = True
        sw = r["metrics"].get("switches")
        ax.set_title(f"{arm} (run {r['run']}" + (f", {sw:.0f} switches" if sw is not None else "") + ")",
                     loc="left", fontsize=9, pad=3)
        ax.set_ylabel("TTFT (ms)")
        ax.set_xlim(0, max(t_end, 1.0))
        ax.grid(axis="y", linewidth=0.3)
    for tw in twins:
        tw.set_ylim(0, rate_max)
    if log:
        axes[0].set_yscale("log")
        axes[0].set_ylim(min(ttfts) / 1.5, max(ttfts) * 2.5)  # room for the phase names and the policy band
    elif ttfts:
        axes[0].set_ylim(0, max(ttfts) * 1.25)  # room for the phase names and the policy band
    axes[-1].set_xlabel("seconds since the load began")
    handles = [Line2D([], [], marker="o", linestyle="", color=PHASE_COLORS.get(p, f"C{3 + i}"),
                      label=f"TTFT, {p} phase") for i, p in enumerate(phase_names)]
    if any_failed:
        handles.append(Line2D([], [], marker="x", linestyle="", color="red", label="failed request (end time)"))
    if any_rate:
        handles.append(Line2D([], [], color="#444444", linewidth=0.8, label="antagonists' CPU rate (right axis)"))
    handles += [Patch(label=f"policy: {p} (top band)" if p != UNKNOWN else
                      "policy unknown (no decisions, attach not confirmed)", **policy_style(p, i))
                for i, p in enumerate(policies)]
    # Laid out in inches: 0.4 for the title, 0.2 per legend row, 0.3 for the first panel's title.
    ncol = min(4, len(handles)) or 1
    header = 0.4 + 0.2 * math.ceil(len(handles) / ncol) + 0.35
    fig.suptitle("Serving experiment: TTFT per request (at its first token), phases and the active policy, "
                 "one run per arm", fontsize=11, y=1.0 - 0.08 / height)
    fig.legend(handles=handles, loc="upper center", ncol=ncol, fontsize=8, bbox_to_anchor=(0.5, 1.0 - 0.35 / height))
    fig.subplots_adjust(left=0.06, right=0.93, top=1.0 - header / height, bottom=0.55 / height, hspace=0.35)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_bars(path, order, arms, plt):
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    specs = [("burst_ttft_p50", "burst TTFT p50", "ms"), ("burst_ttft_p99", "burst TTFT p99", "ms"),
             ("steady_ttft_p99", "steady TTFT p99", "ms"), ("burst_served", "burst requests served", "requests"),
             ("batch_cpu_s", "batch work over the load's phases", "CPU s"), ("switches", "policy switches", "count")]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for ax, (key, title, unit) in zip([a for row in axes for a in row], specs):
        shown = [a for a in order if sub(arms, a, key, "n")]
        for i, a in enumerate(shown):
            s = arms[a][key]
            ax.bar(i, s["mean"], color=arm_color(a), edgecolor="black", linewidth=0.5,
                   hatch="//" if a == "alone" else None)
            if s["ci95"] is not None:
                ax.errorbar(i, s["mean"], yerr=[[s["mean"] - s["ci95"][0]], [s["ci95"][1] - s["mean"]]],
                            color="black", capsize=4, linewidth=1)
            n = len(s["values"])
            xs = [i + (0.5 - (j + 0.5) / n) * 0.4 for j in range(n)] if n > 1 else [i]
            ax.scatter(xs, s["values"], s=12, color="black", zorder=3)
        if key == "batch_cpu_s" and mean_of(arms, "throughput", key):
            ax.axhline(BATCH_TARGET * arms["throughput"][key]["mean"], color="#2ca02c", linestyle="--",
                       linewidth=1, label=f"{BATCH_TARGET:.0%} of static throughput's")
            ax.legend(fontsize=7, loc="upper left")
        ax.set_xticks(range(len(shown)))
        ax.set_xticklabels(shown, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(bottom=0)  # every metric here is >= 0; an interval reaching below is cut at 0
        if key in COUNTS:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(f"{title} ({unit})", fontsize=8)
        ax.grid(axis="y", linewidth=0.3)
        ax.set_axisbelow(True)
    kinds = [("alone", "no antagonists (precondition)"), ("default", "no akts: default scheduler"),
             ("scx_simple", "no akts: scx_simple"), ("latency", "akts, static latency"),
             ("throughput", "akts, static throughput"), ("oracle", "akts, switching")]
    present = {a if a in NO_SWITCHING else "oracle" for a in order if arms.get(a)}
    fig.legend(handles=[Patch(facecolor=arm_color(a), edgecolor="black", hatch="//" if a == "alone" else None,
                              label=l) for a, l in kinds if a in present],
               loc="upper center", ncol=6, fontsize=8, bbox_to_anchor=(0.5, 0.955))
    fig.suptitle("Serving experiment per arm: mean over runs, 95% CI of the mean (Student's t, none with one run), "
                 "dots: the runs", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.925))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- main ------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description="Report of a serving experiment's directory (serving/experiment.sh).")
    ap.add_argument("out", metavar="OUT", help="the experiment's directory")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    ap.add_argument("--brief", action="store_true",
                    help="the text with Table 2, the targets and the verdict only (summary.json is still complete)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--plots", metavar="DIR", help="where to write timeline.png and bars.png (default: OUT)")
    g.add_argument("--no-plots", action="store_true", help="write no plots")
    ap.add_argument("--spread", metavar="FILE",
                    help="the bench's relative spreads (serving/spread.json): with one run per arm, a gap within "
                         "them is inconclusive")
    ap.add_argument("--write-spread", metavar="FILE",
                    help="write this run's relative spreads (std / mean of goodput, burst and steady goodput, burst "
                         "TTFT p50 and batch work per arm, with two runs or more) into FILE under its node, "
                         "replacing that node's entry and keeping the others'")
    args = ap.parse_args(argv)
    out = args.out

    def fail(msg):
        print(f"report.py: {msg}", file=sys.stderr)
        return 2

    if not os.path.isdir(out):
        return fail(f"{out} is not a directory")
    notes = []
    meta = read_object(os.path.join(out, "meta.json"), notes, None, "arms in their usual order, planned runs unknown")

    meta_arms = [a for a in meta.get("arms") if isinstance(a, str)] if isinstance(meta.get("arms"), list) else []
    # Run folders: ARM-RUN, of an arm meta.json (or experiment.sh) knows or holding a load.json or arm.json.
    folders = {}
    for e in sorted(os.listdir(out)):
        m = re.fullmatch(r"(.+)-([0-9]+)", e)
        d = os.path.join(out, e)
        if m and os.path.isdir(d) and (m.group(1) in (meta_arms or KNOWN_ARMS) or any(
                os.path.exists(os.path.join(d, f)) for f in ("load.json", "arm.json"))):
            folders[(m.group(1), int(m.group(2)))] = d
    if not folders:
        return fail(f"{out} holds no runs (no ARM-RUN folders)")

    found = sorted({a for a, _ in folders}, key=lambda a: (KNOWN_ARMS.index(a) if a in KNOWN_ARMS else 99, a))
    order = meta_arms + [a for a in found if a not in meta_arms] if meta_arms else found

    incomplete, runs_by_arm = [], {a: [] for a in order}
    planned = meta.get("runs") if isinstance(meta.get("runs"), int) and not isinstance(meta.get("runs"), bool) else 0
    for a in meta_arms:
        for k in range(1, planned + 1):
            if (a, k) not in folders:
                incomplete.append({"run": f"{a}-{k}", "why": "no run folder"})
    for (a, k), d in sorted(folders.items(), key=lambda x: (x[0][1], order.index(x[0][0]))):
        try:
            runs_by_arm[a].append(read_run(d, a, k, meta, notes))
        except Incomplete as e:
            incomplete.append({"run": f"{a}-{k}", "why": str(e)})
        except Exception as e:  # input this report does not foresee: the run is left out, not the report
            incomplete.append({"run": f"{a}-{k}", "why": f"unreadable ({type(e).__name__}: {e})"})
    for a in runs_by_arm:
        runs_by_arm[a].sort(key=lambda r: r["run"])
    all_runs = [r for a in order for r in runs_by_arm[a]]
    if not all_runs:
        return fail(f"{out} holds no complete runs ({len(incomplete)} incomplete: "
                    + "; ".join(f"{e['run']}: {e['why']}" for e in incomplete[:4])
                    + ("; ..." if len(incomplete) > 4 else "") + ")")

    incomplete.sort(key=lambda e: (int(e["run"].rpartition("-")[2]), order.index(e["run"].rpartition("-")[0])))
    grouped = {}
    for msg, run in notes:
        grouped.setdefault(msg, []).append(run)
    notes = []
    for msg, names in grouped.items():
        names = [n for n in names if n]
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        notes.append(f"{msg} ({len(names)} run{'s' if len(names) > 1 else ''}: {shown})" if names else msg)

    arms = {}
    for a in order:
        keys = []
        for r in runs_by_arm[a]:
            keys += [k for k in r["metrics"] if k not in keys]
        arms[a] = {k: describe([r["metrics"][k] for r in runs_by_arm[a] if k in r["metrics"]],
                               [r["run"] for r in runs_by_arm[a] if k in r["metrics"]]) for k in keys}
    summary = {
        "meta": meta,
        "arms": arms,
        "precondition": precondition(arms),
        "targets": targets(arms, order, runs_by_arm),
        "incomplete": incomplete,
        "runs": [{"arm": r["arm"], "run": r["run"], "order": num(r["arm_json"].get("order")),
                  "metrics": r["metrics"], "batch_source": r["batch_source"]} for r in all_runs],
        "notes": notes,
        "plots": [],
    }
    summary["reaction"] = reaction_table(arms, order, runs_by_arm)
    summary["caveats"] = caveats(arms, order, all_runs, meta)
    summary["claim"] = claim(summary["targets"])
    summary["calibration"] = calibration(arms, meta)
    bench_spread = None
    if args.spread:
        try:
            with open(args.spread) as f:
                bench_spread = (json.load(f).get(meta.get("node") or "") or {}).get("arms")
        except (OSError, ValueError, AttributeError) as e:
            notes.append(f"the bench's spreads ({args.spread}) could not be read: {e}")
    summary["operator"] = operator_verdicts(arms, order, bench_spread)
    summary["schedule"] = schedules(all_runs)
    summary["oracle_lags"] = [dict(x, run=r["name"]) for r in runs_by_arm.get("oracle", []) for x in r.get("oracle_lags", [])]
    summary["standin"] = standin(arms, order)
    summary["batch_window"] = {
        "what": "the antagonists' CPU seconds from started_unix to started_unix + the sum of the phases' durations, "
                "interpolated in batch.tsv; arm.json's batch_cpu_s (the whole bracket) only without a usable batch.tsv",
        "seconds": sorted({round(r["bounds"][-1], 3) for r in all_runs}),
        "from_arm_json": [r["name"] for r in all_runs if r["batch_source"] == "arm.json"
                          and r["arm_json"].get("antagonists") is not False]}

    plots = []
    if not args.no_plots:
        pdir = args.plots or out
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("report.py: matplotlib is not importable: no plots", file=sys.stderr)
            plt = None
        if plt is not None:
            os.makedirs(pdir, exist_ok=True)
            for name, draw in (("timeline.png", lambda p: plot_timeline(p, order, runs_by_arm, plt)),
                               ("bars.png", lambda p: plot_bars(p, order, arms, plt))):
                p = os.path.join(pdir, name)
                try:
                    draw(p)
                    plots.append(p)
                except Exception as e:  # a plot must not cost the table
                    print(f"report.py: {name} not written: {type(e).__name__}: {e}", file=sys.stderr)
    summary["plots"] = plots

    if args.write_spread:
        write_spread(args.write_spread, meta, arms)
    try:
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    except OSError as e:
        print(f"report.py: cannot write {os.path.join(out, 'summary.json')}: {e}", file=sys.stderr)
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
    else:
        # NAME:DURATION:CONCURRENCY[:THINK] of the first run, for a meta.json without "phases".
        first_phases = ",".join(
            f"{p.get('name', '?')}:{num(p.get('duration')) or 0:g}s:{p.get('max_concurrency', '?')}"
            + (f":{p['think_ms']}ms" if num(p.get("think_ms")) else "") for p in all_runs[0]["phases"])
        print(text_report(out, meta, summary, order, plots, first_phases, brief=args.brief))
    return 0


if __name__ == "__main__":
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    sys.exit(main(sys.argv[1:]))
