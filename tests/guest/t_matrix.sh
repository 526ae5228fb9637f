# A smoke run of the policy x workload matrix (bench/matrix.sh, `./akts bench matrix`): every workload's
# plumbing in a default row, a peer's and two akts rows (srpt, which hints, and share, which has targets), short; then
# the report's table from it. And the check that keeps an ejection out of the figures: a peer killed during
# a workload leaves that workload without figures, listed as invalid, and the peer is started again for the
# next one. The figures themselves are the benchmark's to report.
t_matrix() {
	local m=$OUT/matrix
	rm -rf "$m"
	if LOADS=0.3,0.6 BIMODAL_SECONDS=1.5 HB_SECONDS=1 CYC_SECONDS=1 SB_SECONDS=1 COLOC_SECONDS=1 SHARE_TARGETS="25 75" \
		bash /akts/bin/matrix.sh "$m" default scx_simple srpt share 2>"$OUT/matrix.log"; then
		ok "matrix.sh ran four rows to the end"
	else
		not_ok "matrix.sh: $(tail -n 5 "$OUT/matrix.log")"
		return
	fi
	verdicts < <(python3 - "$m" <<'PY'
import json, os, sys
m = sys.argv[1]
def load(*p):
    try:
        return json.load(open(os.path.join(m, *p)))
    except (OSError, ValueError):
        return None
def check(row):
    rm = load(row, "row.json") or {}
    print("ok" if rm.get("usable") and rm.get("invalid") == [] else "not",
          f"{row}: its scheduler ran every workload ({rm.get('start')} .. {rm.get('end')}, invalid {rm.get('invalid')}, {rm.get('error')})", sep="\t")
    hb, cyc, sb, bm, co = (load(row, w + ".json") for w in ("hackbench", "cyclictest", "sysbench", "bimodal", "colocation"))
    figs = []
    good = bool(hb and hb["metrics"]["seconds"] > 0)
    good = good and bool(cyc) and 0 < cyc["metrics"]["lc_wakeup_us"]["avg"] <= cyc["metrics"]["lc_wakeup_us"]["max"]
    good = good and bool(sb) and sb["metrics"]["events_per_s"] > 0
    loads = (bm or {}).get("loads", [])
    good = good and len(loads) == 2 and all(l["requests"] > 0 and l["finished"] > 0 and l["slowdown"]["p50"] >= 1 for l in loads)
    good = good and bm["hints"] == (row == "srpt") and (row != "srpt" or all("hint_ms" in l for l in loads))
    # srpt's hints at the lowest load went through (at higher loads the daemon may shed them: reported, not judged).
    good = good and (row != "srpt" or loads[0]["hint_errors"] <= loads[0]["requests"] // 10)
    targets = (co or {}).get("targets", [])
    good = good and len(targets) == (2 if row == "share" else 1) and all(t["lc_share"] is not None for t in targets)
    if good:
        figs = [hb["metrics"]["seconds"], cyc["metrics"]["lc_wakeup_us"]["max"], round(sb["metrics"]["events_per_s"]),
                [round(l["slowdown"]["p999"], 1) for l in loads], [round(t["lc_share"], 2) for t in targets]]
    print("ok" if good else "not", f"{row}: every workload reported sane figures (hackbench s, cyclictest max us, sysbench ev/s, bimodal p99.9 slowdowns, LC shares: {figs})", sep="\t")
for row in ("default", "scx_simple", "srpt", "share"):
    try:
        check(row)
    except Exception as e:  # a figure missing or of the wrong kind: a failure, never a silent pass
        print("not", f"{row}: the checker could not read its figures: {e!r}", sep="\t")
co = load("share", "colocation.json") or {"targets": []}
s = {t["target"]: t["lc_share"] for t in co["targets"]}
print("ok" if s.get(25) is not None and s.get(75) is not None and s[75] > s[25] else "not",
      f"share's colocation follows its target: LC share {s.get(25)} at 25%, {s.get(75)} at 75%", sep="\t")
PY
)
	if python3 /akts/bin/plot_matrix.py "$m" >"$OUT/matrix_table.md" 2>"$OUT/matrix_plot.log" &&
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["runs"][0]["rows"]
assert [x["row"] for x in rows] == ["default", "scx_simple", "srpt", "share"]
assert all(x["hackbench_s"] and x["bimodal_high_p999"] for x in rows)
assert all((x["colocation_error"] is not None) == (x["row"] == "share") for x in rows)
assert all((x["colocation_lc_share"] is not None) == (x["row"] != "share") for x in rows)' "$(dirname "$m")/matrix.json" 2>>"$OUT/matrix_plot.log"; then
		ok "the report reads the run: a table and matrix.json with every row's figures"
	else
		not_ok "plot_matrix.py: $(tail -n 3 "$OUT/matrix_plot.log")"
	fi

	# The preempt bench (bench/preempt.sh, `./akts bench preempt`) once, short: its four rows and the report's
	# figures (cyclictest's p99 from its histogram, the BE work, the node's context switches and IPIs).
	local pre=$OUT/preempt_bench
	rm -rf "$pre"
	if CYC_SECONDS=1 COLOC_SECONDS=1 bash /akts/bin/preempt.sh "$pre" 1 2>"$OUT/preempt_bench.log" &&
		python3 /akts/bin/preempt_report.py "$pre" --json >"$OUT/preempt_bench.json" 2>>"$OUT/preempt_bench.log" &&
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["runs"] == [1] and not r["left_out"], r["left_out"]
for label in ("default", "latency", "latency+q250us", "preempt"):
    row = r["rows"][label]
    for k in ("cyc_p99_us", "cyc_max_us", "be_bogo_ops_per_s", "cyc_ctxt_per_s", "cyc_res_ipis_per_s", "coloc_lc_share", "coloc_ctxt_per_s"):
        assert row[k] and row[k]["n"] == 1 and row[k]["mean"] >= 0, (label, k, row.get(k))
    assert row["cyc_p99_us"]["mean"] <= row["cyc_max_us"]["mean"], (label, row["cyc_p99_us"], row["cyc_max_us"])
assert len(r["verdicts"]) == 2' "$OUT/preempt_bench.json" 2>>"$OUT/preempt_bench.log"; then
		ok "the preempt bench ran its four rows once and the report read every figure"
	else
		not_ok "the preempt bench: $(tail -n 3 "$OUT/preempt_bench.log")"
	fi

	# A peer killed during a workload: that workload keeps no figures, the next runs under a new instance.
	local k=$OUT/matrix_kill
	rm -rf "$k"
	# Stopped once bimodal's second load has begun (its progress line), whatever the machine's speed.
	(
		for _ in $(seq 1 600); do
			grep -q '^load 0.50:' "$k/scx_simple/bimodal.err" 2>/dev/null && break
			sleep 0.1
		done
		pkill -INT -x scx_simple
	) &
	local killer=$! krc
	WORKLOADS="bimodal hackbench" LOADS=0.3,0.5,0.6 BIMODAL_SECONDS=3 HB_SECONDS=1 \
		bash /akts/bin/matrix.sh "$k" scx_simple 2>"$OUT/matrix_kill.log"
	krc=$?
	wait $killer
	((krc == 0)) || not_ok "matrix.sh with a peer stopped midway ended with exit $krc: $(tail -n 3 "$OUT/matrix_kill.log")"
	verdicts < <(python3 - "$k" <<'PY'
import json, os, sys
k = sys.argv[1]
try:
    rm = json.load(open(os.path.join(k, "scx_simple", "row.json")))
except (OSError, ValueError) as e:
    rm = {"invalid": f"no row.json: {e!r}"}
lost = not os.path.exists(os.path.join(k, "scx_simple", "bimodal.json"))
err = open(os.path.join(k, "scx_simple", "bimodal.err")).read() if os.path.exists(os.path.join(k, "scx_simple", "bimodal.err")) else ""
print("ok" if lost and rm.get("invalid") == ["bimodal"] and "not enabled:simple under scx_simple throughout" in err else "not",
      f"a peer stopped during bimodal: its figures are dropped and it is listed invalid ({rm.get('invalid')}; {err.strip()[-160:]})", sep="\t")
print("ok" if os.path.exists(os.path.join(k, "scx_simple", "hackbench.json")) else "not",
      "the peer is started again and the next workload (hackbench) counts", sep="\t")
PY
)
}
