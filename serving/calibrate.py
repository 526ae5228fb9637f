#!/usr/bin/env python3
"""The serving experiment's calibration on the machine it runs on (serving/experiment.sh, before any arm).

A load's rates and an objective's limits tuned on one machine do not hold on a slower one: a burst rate that a
fast machine serves floods a slow one, and a TTFT limit that a fast machine meets is missed on a slow one by
every arm alike. So both come from the machine's own figures, measured alone (no antagonists, the kernel's
default scheduler):

  calibrate.py capacity LOAD_JSON            requests per second a closed loop of users completed (the load
                                             generator's report of a saturating load): the capacity
  calibrate.py phases PHASES CAPACITY        PHASES with each load written as a multiple of the capacity
                                             (NAME:DURATION:0.8x) turned into an arrival rate (0.8 x CAPACITY,
                                             as RATE/s); other loads are kept as written
  calibrate.py limits SCALE LOAD_JSON...     the objective's limits: SCALE x alone's p99 TTFT and p99 TPOT over
                                             the completed requests of the given runs, pooled (JSON)
  calibrate.py oracle PHASES                 the oracle's phases (JSON): each phase name to latency when it is
                                             busy (more than one closed-loop user, or an arrival rate above the
                                             lightest phase's), else to throughput

Each prints its answer on stdout; a bad input exits 2 with the reason on stderr."""
import json
import re
import sys

from report import pct  # numpy's percentile, as the load generator computes its p99

MULTIPLE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)x$")
RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)/s$")
CONCURRENCY = re.compile(r"^[0-9]+$")


def die(msg):
    print(f"calibrate.py: {msg}", file=sys.stderr)
    sys.exit(2)


def split_phases(text):
    out = []
    for part in text.split(","):
        f = part.split(":")
        if len(f) < 3 or len(f) > 4 or not f[0]:
            die(f"phase {part!r} is not NAME:DURATION:LOAD[:THINK]")
        if not (MULTIPLE.match(f[2]) or RATE.match(f[2]) or CONCURRENCY.match(f[2])):
            die(f"phase {part!r}: the load {f[2]!r} is not a concurrency, RATE/s or a multiple of the capacity (0.8x)")
        out.append(f)
    return out


def load_of(field):
    """A phase's load as a number to compare phases by (a rate, a concurrency or a multiple)."""
    m = MULTIPLE.match(field) or RATE.match(field)
    return float(m.group(1)) if m else float(field)


def read_load(path):
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read {path}: {e}")
    if not isinstance(j, dict) or not isinstance(j.get("phases"), list):
        die(f"{path} is not a load generator's report")
    return j


def capacity(path):
    """Requests completed a second within the probe's phases: each completed request counts for the share of its
    life that fell within them, so neither the ones that ended in the drain after the probe (one per user at most)
    nor those cut by its end bias a short probe up or down."""
    j = read_load(path)
    secs = sum(p.get("duration", 0) for p in j["phases"])
    done = 0.0
    for r in j.get("requests", []):
        if r.get("ok") is not True or not isinstance(r.get("start_s"), (int, float)) \
                or not isinstance(r.get("e2el_ms"), (int, float)) or r["e2el_ms"] <= 0:
            continue
        start, life = r["start_s"], r["e2el_ms"] / 1000
        done += max(0.0, min(start + life, secs) - max(start, 0.0)) / life
    if secs <= 0 or done <= 0:
        die(f"{path}: no request completed within the probe: no capacity to scale the load by")
    return done / secs


def phases(text, cap):
    out = []
    for f in split_phases(text):
        m = MULTIPLE.match(f[2])
        if m:
            if len(f) == 4:
                die(f"phase {':'.join(f)!r}: an arrival rate has no think time")
            rate = f"{float(m.group(1)) * cap:.3f}"
            if float(rate) <= 0 and float(m.group(1)) > 0:
                die(f"phase {f[0]!r}: {f[2]} of {cap} req/s rounds to no arrivals")
            f = [f[0], f[1], f"{rate}/s"]
        out.append(":".join(f))
    return ",".join(out)


def limits(scale, paths):
    ttft, tpot, sent = [], [], 0
    for path in paths:
        j = read_load(path)
        for r in j.get("requests", []):
            sent += 1
            if r.get("ok") is True:
                ttft.append(r.get("ttft_ms"))
                if isinstance(r.get("tpot_ms"), (int, float)):
                    tpot.append(r["tpot_ms"])
    ttft = [t for t in ttft if isinstance(t, (int, float))]
    if len(ttft) < 5:
        die(f"{len(ttft)} requests completed alone over {len(paths)} run(s): too few to set limits by")
    p_ttft, p_tpot = pct(ttft, 99), pct(tpot, 99)
    return {"ttft_ms": round(scale * p_ttft, 1), "tpot_ms": round(scale * p_tpot, 1) if p_tpot else None,
            "scale": scale, "alone_ttft_p99_ms": round(p_ttft, 1),
            "alone_tpot_p99_ms": round(p_tpot, 1) if p_tpot else None,
            "requests": len(ttft), "sent": sent, "runs": len(paths),
            "from": f"{scale:g} x alone's p99 over {len(ttft)} requests of {len(paths)} calibration run(s) "
                    "(no antagonists, the default scheduler, the same schedule)"}


def oracle(text):
    """Busy: a closed-loop phase of more than one user, or an arrival rate above the lightest non-zero rate."""
    fs = split_phases(text)
    rates = [load_of(f[2]) for f in fs if not CONCURRENCY.match(f[2]) and load_of(f[2]) > 0]
    lightest = min(rates) if rates else 0.0
    busy = {}
    for f in fs:
        b = int(f[2]) > 1 if CONCURRENCY.match(f[2]) else load_of(f[2]) > lightest
        busy[f[0]] = busy.get(f[0], False) or b
    return {"phases": {name: "latency" if b else "throughput" for name, b in busy.items()}}


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "capacity" and len(args) == 1:
        print(f"{capacity(args[0]):.4f}")
    elif cmd == "phases" and len(args) == 2:
        try:
            cap = float(args[1])
        except ValueError:
            die(f"capacity {args[1]!r} is not a number")
        if not cap > 0:
            die(f"capacity {args[1]!r} must be positive")
        print(phases(args[0], cap))
    elif cmd == "limits" and len(args) == 1:
        die("no calibration run completed: no limits to set")
    elif cmd == "limits" and len(args) >= 2:
        try:
            scale = float(args[0])
        except ValueError:
            die(f"scale {args[0]!r} is not a number")
        if not scale > 0:
            die("the scale must be positive")
        print(json.dumps(limits(scale, args[1:])))
    elif cmd == "oracle" and len(args) == 1:
        print(json.dumps(oracle(args[0])))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
