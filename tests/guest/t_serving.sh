# A smoke run of the serving experiment (serving/experiment.sh) on its default,
# GPU-shaped node: short phases, one run of each arm whose code differs (alone:
# no antagonists; default: no scheduler; a peer; the oracle's schedule; the
# detector; the llm controller with its own llama-server), and its report
# (serving/report.py, without plots: the guest has no matplotlib). It checks the
# plumbing (the rpc server up, every layer offloaded to it, the stand-in
# computing in every arm, llama-server serving, partial mode moving the server
# and the antagonists into SCHED_EXT, the load generator measuring, each kind of
# arm attaching and detaching, batch work counted, the oracle switching, the
# report reading a run with arms missing), not the figures. The static akts
# arms and the bandit share this code; every arm, seven runs each:
# `./akts bench serving` (and `--node cpu` for the CPU-bound node).
t_serving() {
	local out=/tmp/akts-serving
	rm -rf "$out"
	PHASES=steady:2s:1:300ms,burst:2s:3,steady:2s:1:300ms bash /akts/bin/serving/experiment.sh "$out" 1 \
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
	verdicts < <(python3 - "$out" <<'PY'
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
print(("ok" if meta.get("node") == "gpu" and len(parts) == 2 and parts[0] == parts[1] and int(parts[1]) > 0 else "not")
      + "\tthe GPU node: llama-server put every layer on the rpc server (%r, node %r)" % (off, meta.get("node")))
# The measured llama-server's own connection to the stand-in (ss, by its pid), not the probes' before it.
print(("ok" if meta.get("rpc_connected") is True else "not")
      + "\tthe measured llama-server held a connection to ggml-rpc-server (rpc_connected %r)" % meta.get("rpc_connected"))
for arm in ("alone", "default", "scx_simple", "oracle", "detector", "llm"):
    served, p50, batch = val(arm, "burst_served"), val(arm, "burst_ttft_p50"), val(arm, "batch_cpu_s")
    good = bool(served) and p50 is not None and p50 > 0 and (arm == "alone" or (batch or 0) > 0)
    print(("ok" if good else "not") + "\tserving arm %s: %s burst requests, burst TTFT p50 %.0f ms, batch %.1f CPU s"
          % (arm, served, p50 or 0, batch or 0))
    # The stand-in computed this arm's requests (its CPU time per request sent), not llama-server alone.
    per = val(arm, "standin_ms_per_req")
    print(("ok" if per and per > 0 else "not") + "\tserving arm %s: the stand-in computed its requests (%s ms of its CPU"
          " a request)" % (arm, "%.0f" % per if per else per))
inc = s.get("incomplete") or []
print(("not" if inc else "ok") + "\tevery run was usable: its arm's scheduler attached for the whole load, the server"
      " answered, every antagonist ran%s" % ("" if not inc else " (%s)" % "; ".join(map(str, inc))[:300]))
sw = val("oracle", "switches")
print(("ok" if sw and sw >= 1 else "not") + "\tthe oracle arm switched (%s switches)" % sw)
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
)
}
