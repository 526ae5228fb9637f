#!/usr/bin/env python3
"""The dashboard's main panels drawn from a real Prometheus's answers: tests/guest/t_prometheus.sh saves every
panel query's range over the test (OUT/prometheus_panels.json), and this draws the running policy, the switches by
cause, the LC waits against the objective's limit, the breaker and the CPU per class, as Grafana would.

    plot_panels.py PANELS_JSON OUT_PNG
"""
import json
import sys


def series(saved, title, label=None):
    """[(legend, expr, labels, [(t, v)])] of the queries of the panel whose title starts with `title`."""
    out = []
    for key, res in saved.items():
        if not key.startswith(title):
            continue
        expr = key.split(": ", 1)[1]
        for s in res:
            pts = [(float(t), float(v)) for t, v in s["values"] if v not in ("NaN", "+Inf", "-Inf")]
            name = s["metric"].get(label) if label else None
            out.append((name or expr, expr, s["metric"], pts))
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = json.load(open(argv[0]))
    saved, t0 = d["queries"], d["start_s"]
    fig, ax = plt.subplots(5, 1, figsize=(9, 11), sharex=True)

    def mark(a):
        a.axvline(d["switch_s"] - t0, color="#888", ls=":", lw=1)
        if d.get("trip_s"):
            a.axvline(d["trip_s"] - t0, color="#c00", ls=":", lw=1)

    # Running policy: one row per policy, a bar where it ran.
    rows = [(name, pts) for name, expr, m, pts in series(saved, "Running policy", "policy")]
    for i, (name, pts) in enumerate(sorted(rows)):
        step = min((b[0] - a[0] for a, b in zip(pts, pts[1:])), default=1.0)  # the query's step: one bar a sample
        on = [(t - t0, step) for t, v in pts if v == 1]
        ax[0].broken_barh(on, (i - 0.35, 0.7), color="#3a7")
    ax[0].set_yticks(range(len(rows)), [n for n, _ in sorted(rows)])
    ax[0].set_title("Running policy (dotted: the test's switch, grey; the breaker's trip, red)", fontsize=9)
    mark(ax[0])

    for name, expr, m, pts in series(saved, "Switches by cause", "cause"):
        ax[1].bar([t - t0 for t, _ in pts], [v for _, v in pts], width=1.0, label=name, alpha=0.8)
    ax[1].set_title("Switches by cause (a minute, over $__rate_interval)", fontsize=9)
    ax[1].legend(fontsize=7)
    mark(ax[1])

    for name, expr, m, pts in series(saved, "Waits per class: p99 and the oldest waiter"):
        if m.get("class") != "lc":
            continue
        label = ("p99 " if "histogram_quantile" in expr else "oldest waiting ") + "lc"
        ax[2].plot([t - t0 for t, _ in pts], [v * 1e3 for _, v in pts], label=label)
    for name, expr, m, pts in series(saved, "Objective: each limit's signal and its limit"):
        if "akts_objective_limit_seconds" in expr:
            ax[2].plot([t - t0 for t, _ in pts], [v * 1e3 for _, v in pts], ls="--", color="k",
                       label=f"limit ({m.get('signal')})")
    ax[2].set_yscale("symlog", linthresh=1)
    ax[2].set_ylabel("ms")
    ax[2].set_title("LC waits and the objective's limit", fontsize=9)
    ax[2].legend(fontsize=7)
    mark(ax[2])

    resc = ax[3].twinx()  # the guard's rescues run to thousands a minute: an axis of their own
    for name, expr, m, pts in series(saved, "Breaker and bounded-wait rescues"):
        if "trips_total" in expr:
            a, label, color = ax[3], "trips a minute: " + m.get("reason", ""), "#c00"
        elif "tripped" in expr:
            a, label, color = ax[3], "tripped (holding the safe policy)", "#f90"
        else:
            a, label, color = resc, "rescues a minute: " + m.get("class", ""), "#888"
        if any(v for _, v in pts):
            a.step([t - t0 for t, _ in pts], [v for _, v in pts], where="post", label=label, color=color)
    ax[3].set_title("Breaker and the guard's rescues (right axis)", fontsize=9)
    h1, l1 = ax[3].get_legend_handles_labels()
    h2, l2 = resc.get_legend_handles_labels()
    ax[3].legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    mark(ax[3])

    for name, expr, m, pts in series(saved, "CPU per class (batch work is BE)", "class"):
        ax[4].plot([t - t0 for t, _ in pts], [v for _, v in pts], label=name)
    ax[4].set_ylabel("CPUs")
    ax[4].set_title("CPU per class", fontsize=9)
    ax[4].legend(fontsize=7)
    ax[4].set_xlabel("seconds (QEMU TCG guest; Prometheus scraping every 2 s)")
    mark(ax[4])
    fig.suptitle("akts's dashboard panels, from Debian's Prometheus scraping a running daemon", fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
