# The llm controller against a real model server: llama-server (Debian's
# llama.cpp) serving the small random-weight llama GGUF the image build wrote
# (serving/make_model.py), on the second CPU. Its answers are noise: the test
# shows the plumbing (questions asked, answers read, decision latency
# measured), that every answer that is not a filled slot is refused and
# changes nothing, and that the daemon's windows carry the server's own
# metrics (its Prometheus endpoint). Not the quality of any decision.
t_llm() {
	local model=/opt/akts/models/random-llama.gguf sock=/run/akts/llm.sock cfg=/tmp/akts-llm.json
	local log=$OUT/llm_daemon.log
	if [[ ! -f $model ]]; then
		not_ok "the image holds the random-weight model ($model is missing: ./akts setup rebuilds the image)"
		return
	fi
	taskset -c 1 llama-server -m "$model" --host 127.0.0.1 --port 8081 -c 4096 -np 2 -t 1 --metrics \
		>"$OUT/llm_server.log" 2>&1 &
	local srv=$! i
	for i in $(seq 1 240); do curl -sf http://127.0.0.1:8081/health >/dev/null && break; sleep 0.5; done
	if ! curl -sf http://127.0.0.1:8081/health >/dev/null; then
		not_ok "llama-server serves the random model ($(tail -n 3 "$OUT/llm_server.log"))"
		kill $srv 2>/dev/null
		return
	fi
	cat >"$cfg" <<JSON
{"socket": "$sock", "policies": ["latency", "throughput"], "initial": "throughput",
 "telemetry": {"period": "100ms", "metrics_url": "http://127.0.0.1:8081/metrics"},
 "controller": {"name": "llm", "min_dwell": "0ms",
                "llm": {"endpoint": "http://127.0.0.1:8081", "timeout": "20s", "decide_every": 5}}}
JSON
	akts daemon -c "$cfg" >"$log" 2>&1 &
	local dpid=$!
	for i in $(seq 1 100); do [[ -S $sock ]] && break; sleep 0.1; done
	# Until two answers are in (a question and its answer take seconds under TCG), at most 60 s.
	for i in $(seq 1 120); do
		akts controller --socket $sock --json 2>/dev/null |
			python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["controller_state"]["answered"] >= 2 else 1)' &&
			break
		sleep 0.5
	done
	akts controller --socket $sock --json >"$OUT/llm_controller.json"
	akts log --socket $sock --json -n 500 >"$OUT/llm_log.jsonl"
	python3 "$HERE/rpc.py" $sock '{"jsonrpc":"2.0","id":1,"method":"v1.telemetry","params":{"last":50}}' \
		>"$OUT/llm_windows.json"
	verdicts < <(python3 - "$OUT/llm_controller.json" "$OUT/llm_log.jsonl" "$OUT/llm_windows.json" <<'PY'
import json, sys
ctl = json.load(open(sys.argv[1]))
st = ctl["controller_state"]
log = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
tel = json.load(open(sys.argv[3]))["result"]
def line(ok, what):
    print(("ok" if ok else "not") + "\t" + what)
lat = st["latency_ms"]
print("# llm: asked %d, answered %d, refused %s; decision latency min %s p50 %s max %s ms (TCG)" % (
    st["asked"], st["answered"], st["refused"], lat.get("min"), lat.get("p50"), lat.get("max")))
line(st["asked"] >= 2 and st["answered"] >= 1 and lat["samples"] >= 1,
     "the llm controller asks the model over /v1/completions and measures its decision latency")
llm = [d for d in log if d.get("source") == "llm"]
for d in llm[:3]:
    print("# answer %s -> %s" % (json.dumps(d.get("raw"))[:60], d.get("why", "")[:100]))
slots = {"0", "1", "latency", "throughput"}
bad_applied = [d for d in llm if d.get("applied") and (d.get("raw") or "").strip() not in slots]
refused_changed = [d for d in llm if not d.get("applied") and d.get("selected_after") != 1 and
                   not any(x.get("applied") for x in llm)]
line(not bad_applied and not refused_changed,
     "no malformed answer was applied; the selection stayed where it was (%d llm decisions logged, %d applied)" % (
         len(llm), sum(1 for d in llm if d.get("applied"))))
seen = [w for w in tel["windows"] if w["app"]["requests_processing"] is not None]
scr = tel["health"]["metrics_scrapes"]
line(len(seen) > 0 and scr["ok"] > 0,
     "windows carry llama-server's metrics (%d of %d windows; scrapes ok %d, failed %d)" % (
         len(seen), len(tel["windows"]), scr["ok"], scr["failed"]))
PY
)
	kill -TERM $dpid
	wait $dpid
	local rc=$?
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	if ((rc == 0)); then ok "the daemon with the llm controller stops cleanly"; else not_ok "the daemon with the llm controller stops cleanly (exit $rc; $(tail -n 3 "$log"))"; fi
}
