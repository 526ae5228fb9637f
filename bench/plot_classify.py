#!/usr/bin/env python3
"""Charts `./akts bench classify`'s report: exec-to-class latency (p50, p95) and the daemon's idle CPU against
the number of processes, scanning /proc against following the kernel's events.

  plot_classify.py DIR    reads DIR/classify.json, writes DIR/classify.png and DIR/classify.md"""
import json, os, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    r = json.load(open(os.path.join(d, "classify.json")))
    rows = [x for x in r["results"] if "error" not in x]
    modes = [m for m in ("scan", "events") if any(x["mode"] == m for x in rows)]
    label = {"scan": "scan /proc every 100 ms (before)", "events": "proc connector events (after)"}
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for m in modes:
        xs = sorted((x for x in rows if x["mode"] == m), key=lambda x: x["processes"])
        n = [x["processes"] for x in xs]
        a.plot(n, [x["exec_to_class_ms"]["p50"] for x in xs], "o-", label=label[m] + " p50")
        a.plot(n, [x["exec_to_class_ms"]["p95"] for x in xs], "o--", label=label[m] + " p95", alpha=0.6)
        b.plot(n, [x["daemon_cpu_percent"] for x in xs], "o-", label=label[m])
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_xlabel("processes alive (all classified)")
        ax.grid(True, which="both", alpha=0.3)
    a.set_yscale("log")
    a.set_ylabel("exec to class in the kernel (ms)")
    a.set_title("A new process's wait for its class")
    b.set_ylabel("daemon CPU while idle (% of one CPU)")
    b.set_title("What following N processes costs")
    a.legend(fontsize=7)
    b.legend(fontsize=7)
    fig.suptitle(f"akts classification, {r['kernel']}, {r['cpus']} vCPUs, {r['mem_total_mib']} MiB (QEMU TCG: emulated)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "classify.png"), dpi=110)
    with open(os.path.join(d, "classify.md"), "w") as f:
        f.write("| mode | processes | exec to class p50 / p95 / max (ms) | daemon CPU idle | scan took (last / max ms) | "
                "take-up (s) |\n|---|---:|---:|---:|---:|---:|\n")
        for x in sorted(r["results"], key=lambda x: (x["processes"], x["mode"] != "scan")):
            if "error" in x:
                f.write(f"| {x['mode']} | {x['processes']} | error: {x['error']} | | | |\n")
                continue
            e = x["exec_to_class_ms"]
            f.write(f"| {x['mode']} | {x['processes']} | {e['p50']:.0f} / {e['p95']:.0f} / {e['max']:.0f} | "
                    f"{x['daemon_cpu_percent']:.1f}% | {x['last_scan_ms']:.0f} / {x['max_scan_ms']:.0f} | {x['takeup_s']} |\n")
    print(os.path.join(d, "classify.png"))


if __name__ == "__main__":
    main()
