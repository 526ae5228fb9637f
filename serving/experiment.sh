#!/bin/bash
# The serving experiment in the guest (a first cut of issue 10's Table 2):
# llama-server and CPU-bound batch work share the measured CPU (0); the load
# generator and the daemon run on the apparatus CPU (1). For each arm, a
# steady -> burst -> steady load; per arm: the load generator's report
# (TTFT per phase) and the batch work (CPU seconds the antagonists got).
#
#   experiment.sh OUT RUNS ARM...     arms: default latency throughput oracle detector
#
# Runs are interleaved across arms. The BPF arms manage every task
# (--switch-all), llama-server as LC and stress-ng as BE by name.
set -uo pipefail
OUT=$1
RUNS=$2
shift 2
ARMS=("$@")
PHASES=${PHASES:-steady:5s:1,burst:5s:4,steady:5s:1}
MODEL=/opt/akts/models/random-llama.gguf
SOCK=/run/akts/serving.sock
mkdir -p "$OUT"

log() { echo "[serving] $*" >&2; }

# Phase boundaries in seconds from the load's start, for the oracle.
boundaries() {
	python3 - "$PHASES" <<'PY'
import sys, re
t, out = 0.0, []
for p in sys.argv[1].split(","):
    name, dur, conc = p.split(":")
    m = re.fullmatch(r"([0-9.]+)(ms|s)", dur)
    out.append((t, int(conc)))
    t += float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
steps = [{"at": "%gms" % (a * 1000), "policy": "latency" if c > 1 else "throughput"} for a, c in out]
merged = []
for s in steps:
    if not merged or merged[-1]["policy"] != s["policy"]:
        merged.append(s)
merged[0]["at"] = "0s"
import json
print(json.dumps({"steps": merged}))
PY
}

taskset -c 0 llama-server -m "$MODEL" --host 127.0.0.1 --port 8080 -c 8192 -np 8 --threads-http 16 -t 1 \
	--metrics >"$OUT/llama-server.log" 2>&1 &
SERVER=$!
for i in $(seq 1 240); do curl -sf http://127.0.0.1:8080/health >/dev/null && break; sleep 0.5; done
curl -sf http://127.0.0.1:8080/health >/dev/null || { log "llama-server did not start"; exit 1; }
boundaries >"$OUT/oracle.json"

# CPU seconds (user+system) of a process tree's threads, from /proc.
cpu_seconds() {
	local total=0 pid
	for pid in $(pgrep -f 'stress-ng'); do
		awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$pid/stat" 2>/dev/null
	done | awk '{ s += $1 } END { printf "%.3f\n", s }'
}

run_arm() {
	local arm=$1 run=$2 dir="$OUT/$arm-$run" dpid=""
	mkdir -p "$dir"
	taskset -c 0 stress-ng --cpu 2 --timeout 120s >/dev/null 2>&1 &
	local hogs=$!
	sleep 1
	local ctl=none
	case $arm in
	default) ;;
	latency | throughput | oracle | detector)
		[[ $arm == detector ]] && ctl=detector
		cat >"$dir/akts.json" <<JSON
{"socket": "$SOCK", "switch_all": true, "policies": ["latency", "throughput"],
 "initial": "$([[ $arm == latency ]] && echo latency || echo throughput)",
 "objective": {"signal": "request_latency_p99", "max": "300ms"},
 "telemetry": {"metrics_url": "http://127.0.0.1:8080/metrics"},
 "controller": {"name": "$ctl", "min_dwell": "500ms",
                "oracle": {"schedule": "$OUT/oracle.json"},
                "detector": {"lc_busy_share": 0, "app_busy_requests": 2}},
 "decision_log": {"path": "$dir/decisions.jsonl"},
 "classes": [{"class": "lc", "comm": "llama-server"}, {"class": "be", "comm": "stress-ng"}]}
JSON
		taskset -c 1 akts daemon -c "$dir/akts.json" >"$dir/daemon.log" 2>&1 &
		dpid=$!
		for i in $(seq 1 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
		sleep 1
		;;
	esac
	[[ $arm == oracle ]] && akts controller --socket $SOCK oracle >/dev/null
	local push=()
	[[ -n $dpid ]] && push=(--push-socket $SOCK)
	local c0 c1
	c0=$(cpu_seconds)
	taskset -c 1 akts loadgen --url http://127.0.0.1:8080 --phases "$PHASES" --n-predict 16 --quiet \
		"${push[@]}" --out "$dir/load.json" >"$dir/load.txt" 2>&1
	c1=$(cpu_seconds)
	local switches=0
	# Switches a controller applied (not the operator's or the config's records).
	[[ -n $dpid ]] && switches=$(python3 -c 'import json,sys
n = 0
for l in open(sys.argv[1]):
    d = json.loads(l)
    n += d.get("type") == "decision" and d.get("applied") is True and d.get("source") not in ("operator", "config")
print(n)' "$dir/decisions.jsonl" 2>/dev/null || echo 0)
	if [[ -n $dpid ]]; then
		kill -TERM "$dpid"
		wait "$dpid"
	fi
	kill "$hogs" 2>/dev/null
	wait "$hogs" 2>/dev/null
	echo "{\"arm\": \"$arm\", \"run\": $run, \"batch_cpu_s\": $(echo "$c1 - $c0" | bc -l 2>/dev/null || python3 -c "print($c1 - $c0)"), \"decisions_applied\": $switches}" >"$dir/arm.json"
	log "$arm run $run: $(head -c 300 "$dir/load.txt" | tail -n 3 | tr '\n' ' ')"
}

for run in $(seq 1 "$RUNS"); do
	for arm in "${ARMS[@]}"; do run_arm "$arm" "$run"; done
done
kill $SERVER 2>/dev/null
wait $SERVER 2>/dev/null
python3 "$(dirname "$0")/summarize.py" "$OUT"
