# A smoke run of the serving experiment (serving/experiment.sh): short phases,
# one run of three arms. It checks the plumbing (llama-server serves, the load
# generator measures, the daemon's arms attach and detach, batch work is
# counted, the oracle switches), not the figures.
t_serving() {
	local out=/tmp/akts-serving
	rm -rf "$out"
	PHASES=steady:2s:1,burst:2s:3,steady:2s:1 bash /akts/bin/serving/experiment.sh "$out" 1 default latency oracle \
		>"$OUT/serving_smoke.log" 2>&1
	local rc=$?
	cp "$out"/summary.json "$OUT/serving_summary.json" 2>/dev/null
	verdicts < <(python3 - "$out/summary.json" "$rc" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("not\tthe serving experiment ran (exit %s, %s)" % (sys.argv[2], e))
    sys.exit()
for arm in ("default", "latency", "oracle"):
    a = s.get(arm, {})
    served = a.get("burst_served", [0])[0] if a.get("burst_served") else 0
    batch = a.get("batch_cpu_s", [0])[0] if a.get("batch_cpu_s") else 0
    p50 = a.get("burst_ttft_p50", [None])[0] if a.get("burst_ttft_p50") else None
    print(("ok" if served > 0 and batch >= 0 and p50 else "not") +
          "\tserving arm %s: %s burst requests, burst TTFT p50 %s ms, batch %.1f CPU s" % (arm, served, p50, batch))
sw = s.get("oracle", {}).get("switches", [0])
print(("ok" if sw and sw[0] >= 1 else "not") + "\tthe oracle arm switched (%s switches)" % sw)
PY
)
}
