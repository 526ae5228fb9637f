# A smoke run of the serving experiment (serving/experiment.sh) on its default
# node (gpu-hostwork): short phases, one run of each arm whose code differs
# (alone: no antagonists; default: no scheduler; a peer; the oracle following
# the phases; the detector; the llm controller with its own llama-server), and its report
# (serving/report.py, without plots: the guest has no matplotlib). It checks the
# plumbing (the calibration: a capacity probe and one alone run setting the
# load's rates and the objective's limits; one open-loop schedule replayed in
# every arm; goodput scored; the oracle following the phases the load says;
# the rpc server up, the node's layers offloaded to it, the stand-in
# computing in every arm, llama-server serving, partial mode moving the server
# and the antagonists into SCHED_EXT, the load generator measuring, each kind of
# arm attaching and detaching, batch work counted, the oracle switching, the
# report reading a run with arms missing), not the figures. The static akts
# arms and the bandit share this code; every arm, seven runs each:
# `./akts bench serving` (and `--node cpu` for the CPU-bound node).
t_serving() {
	local out=/tmp/akts-serving
	rm -rf "$out"
	PHASES=steady:3s:0.3x,burst:3s:1x,steady:3s:0.3x CAPACITY_SECONDS=3 CALIBRATION_RUNS=1 DRAIN=5s \
		bash /akts/bin/serving/experiment.sh "$out" 1 \
		alone default scx_simple oracle detector llm >"$OUT/serving_smoke.log" 2>&1
	local rc=$?
	python3 /akts/bin/serving/report.py "$out" --no-plots >"$OUT/serving_report.txt" 2>&1
	local rrc=$?
	cp "$out"/summary.json "$OUT/serving_summary.json" 2>/dev/null
	if ((rc == 0 && rrc == 0)); then
		ok "the serving experiment and its report ran (each kind of arm, one short run)"
	else
		not_ok "the serving experiment and its report ran (experiment exit $rc, report exit $rrc; $(tail -n 2 "$OUT/serving_smoke.log" | tr '\n' ' '))"
	fi
	verdicts < <( (python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
try:
    s = json.load(open(os.path.join(out, "summary.json")))
except Exception as e:
    print("not\tthe report wrote summary.json (%s)" % e)
    sys.exit()
arms = s.get("arms", {})
def val(arm, key):
    v = arms.get(arm, {}).get(key, {}).get("values") or [None]
    return v[0]
meta = s.get("meta", {})
off = meta.get("offloaded") or ""
parts = off.split()[1].split("/") if off.startswith("offloaded ") else []
# The default node, gpu-hostwork: one layer on the stand-in (NGL=1), the rest on the measured CPU.
print(("ok" if meta.get("node") == "gpu-hostwork" and meta.get("ngl") == 1 and len(parts) == 2 and parts[0] == "1"
       and int(parts[1]) > 1 else "not")
      + "\tthe gpu-hostwork node: llama-server put one layer of %s on the rpc server (%r, node %r, ngl %r)"
      % (parts[1] if len(parts) == 2 else "?", off, meta.get("node"), meta.get("ngl")))
# The measured llama-server's own connection to the stand-in (ss, by its pid), not the probes' before it.
print(("ok" if meta.get("rpc_connected") is True else "not")
      + "\tthe measured llama-server held a connection to ggml-rpc-server (rpc_connected %r)" % meta.get("rpc_connected"))
arrivals = (s.get("schedule") or {}).get("arrivals")
for arm in ("alone", "default", "scx_simple", "oracle", "detector", "llm"):
    # Every arrival of the schedule is in the run's report, answered or counted as failed (an arm that starves the
    # server, as throughput under the llm's noise can, serves none of the burst: that is a figure, not a fault).
    sent, served, batch = val(arm, "sent"), val(arm, "burst_served"), val(arm, "batch_cpu_s")
    good = arrivals and sent == arrivals and (arm == "alone" or (batch or 0) > 0)
    print(("ok" if good else "not") + "\tserving arm %s: %s of the schedule's %s requests accounted for (%s burst "
          "requests served), batch %.1f CPU s" % (arm, sent, arrivals, served, batch or 0))
    # The stand-in computed this arm's requests (its CPU time per request sent), not llama-server alone.
    per = val(arm, "standin_ms_per_req")
    print(("ok" if per and per > 0 else "not") + "\tserving arm %s: the stand-in computed its requests (%s ms of its CPU"
          " a request)" % (arm, "%.0f" % per if per else per))
p50 = val("alone", "burst_ttft_p50")
print(("ok" if val("alone", "burst_served") and p50 and p50 > 0 else "not")
      + "\tllama-server served the burst alone (TTFT p50 %s ms)" % p50)
inc = s.get("incomplete") or []
print(("not" if inc else "ok") + "\tevery run was usable: its arm's scheduler attached for the whole load, the server"
      " answered, every antagonist ran%s" % ("" if not inc else " (%s)" % "; ".join(map(str, inc))[:300]))
sw = val("oracle", "switches")
print(("ok" if sw and sw >= 1 else "not") + "\tthe oracle arm switched (%s switches)" % sw)
# The oracle follows the load's own clock: at each boundary where its policy changes, a switch (any lag: the
# bench reports it against its bound; a smoke on a loaded machine is no measure of it).
lags = s.get("oracle_lags") or []
print(("ok" if len(lags) == 2 and all(x.get("lag_ms") is not None for x in lags) else "not")
      + "\tthe oracle switched at the load's phase boundaries it was told of (%s)" % lags)
cal = meta.get("calibration") or {}
print(("ok" if (cal.get("capacity_rps") or 0) > 0 and (cal.get("measured") or {}).get("ttft_ms", 0) > 0
       and "/s" in (cal.get("load_phases") or "") else "not")
      + "\tthe calibration measured the capacity and alone's TTFT, and set the load's rates from them (%s)"
      % {k: cal.get(k) for k in ("capacity_rps", "load_phases", "slo")})
sc = s.get("schedule") or {}
print(("ok" if sc.get("same") is True and sc.get("runs") == 6 and (sc.get("arrivals") or 0) > 0 else "not")
      + "\tevery arm replayed one schedule (%s)" % sc)
for arm in ("alone", "default", "oracle"):
    g = val(arm, "goodput")
    print(("ok" if g is not None else "not") + "\tserving arm %s: goodput scored (%s requests/s)" % (arm, g))
for name in ("oracle-1", "detector-1"):
    t = os.path.join(out, name, "telemetry.jsonl")
    n = sum(1 for l in open(t)) if os.path.exists(t) else 0
    print(("ok" if n >= 20 else "not") + "\t%s saved its telemetry windows (%d)" % (name, n))
# The load generator reports its oldest unanswered request's wait (v1.push waiting_ms): the windows carry it.
t = os.path.join(out, "detector-1", "telemetry.jsonl")
waits = []
for l in (open(t) if os.path.exists(t) else []):
    try:
        v = json.loads(l).get("app", {}).get("waiting_oldest_ms")
    except ValueError:
        continue
    if isinstance(v, (int, float)):
        waits.append(v)
print(("ok" if any(v > 0 for v in waits) and any(v == 0 for v in waits) else "not") +
      "\tthe detector's windows carry the load generator's waits (%d windows with a report, longest %.0f ms)"
      % (len(waits), max(waits or [0])))
PY
	) || echo "not	the smoke's checks ran (their script failed: see the lines above)")
}
