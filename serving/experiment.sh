#!/bin/bash
# The serving experiment in the guest (issue 10, the paper's Table 2): raw runs
# for serving/report.py.
#
#   experiment.sh OUT RUNS ARM...
#
# Arms:
#   alone       the kernel's default scheduler, no antagonists (the precondition)
#   default     the kernel's default scheduler (no BPF scheduler attached)
#   scx_simple  the kernel's tools/sched_ext peer (it schedules every task)
#   latency, preempt, throughput      akts with one static policy (preempt: latency's order, and a waking LC
#               task takes the CPU from batch work at once)
#   latency_q250  static latency with the frame's quantum timer at 250 us (slices end between ticks; off in
#               every other arm)
#   oracle      akts switching at the load's phase boundaries: the load generator says each phase as it begins
#               (v1.push phase) and the oracle runs that phase's policy (latency for a phase busier than the
#               lightest, throughput otherwise), so a slow start or a slow machine cannot shift it
#   detector, bandit, learner, llm    akts's online controllers: they see telemetry, never the schedule
#
# Three nodes (NODE):
#   gpu     a GPU server's shape: llama-server keeps the serving path (HTTP, tokenizing, batching,
#           sampling, streaming) on the measured CPU (MEASURED, default 0), and every layer's compute goes over
#           llama.cpp's RPC backend to ggml-rpc-server on the apparatus CPU (APPARATUS, default 1): the stand-in
#           for the accelerator. The akts arms run in partial mode, as the paper's did: only llama-server (LC)
#           and the antagonists (BE) are in SCHED_EXT; the stand-in and the apparatus stay in the fair class in
#           every arm, so the policy under test never schedules the "GPU". scx_simple has no partial mode: it
#           schedules the stand-in too (the report says so).
#   gpu-hostwork (the default)  the GPU node with part of the per-token work on the host CPU, as a vLLM-class engine's
#           scheduling, sampling and detokenising are: NGL (default 1) of the model's layers on the stand-in,
#           the rest computed by llama-server on the measured CPU, beside two hogs. Here the default
#           scheduler hurts the serving path (its steady TTFT p99 several times alone's); on gpu it hardly does.
#   cpu     llama-server computes the model itself on the measured CPU (the earlier experiment): a burst
#           under latency takes the whole CPU from the batch work, so switching keeps at most about 72% of
#           throughput's batch work (docs/serving.md). The akts arms manage every task (switch_all), as
#           scx_simple does.
# Either way stress-ng CPU hogs are pinned to the measured CPU (the batch work: one on the gpu node, two on
# the gpu-hostwork and cpu nodes), and the load generator, the daemon, the samplers and the llm controller's own model server
# run on the apparatus CPU. llama-server is LC and stress-ng BE, by name.
# The circuit breaker is disarmed in every akts arm: static throughput must be
# allowed to make the server wait (that is the arm), and a breaker that took
# over would blur which arm decided; its trips are checked by the selftest and
# tests/guest/t_breaker.sh.
# The load (PHASES): on the GPU nodes, open-loop arrivals (the load generator's RATE/s phases) on one seeded
# schedule (SEED, BURSTINESS) that every arm replays; a load written as a multiple of the capacity (0.8x) is
# turned into a rate by the calibration below. On the cpu node, closed-loop users (steady and burst users
# apart). A request still unanswered DRAIN after the last phase counts as failed (a miss), never absent.
# Calibration, before any arm, on the machine itself (alone: no antagonists, the default scheduler;
# serving/calibrate.py): the capacity (requests per second a closed loop of 6 users completes, when PHASES
# has multiples), then CALIBRATION_RUNS runs of the load, whose pooled p99 TTFT and TPOT times SLO_SCALE are
# the objective's limits (unless SLO_TTFT and SLO_TPOT are given). Every arm's load generator scores goodput
# under them, and the online arms' TTFT objective is the TTFT limit (unless OBJECTIVE_MAX is given).
# OUT/calibration/ holds its runs and calibration.json what it found.
# Runs are interleaved (run 1 of every arm, then run 2, ...; each run starts
# one arm further along the list), after a warm-up load no arm sees; every
# controller starts fresh in each run (nothing is learnt across runs; the
# learner's state file is the run's own unless LEARNER_STATE names one that
# outlives it, to measure learning). A run
# whose scheduler was not the arm's for the whole load (checked in
# /sys/kernel/sched_ext at its start and end), whose antagonists did not all
# start or whose server stopped answering is marked unusable in arm.json
# ("error", "attach", "server_healthy"), and the report leaves it out.
#
# Per arm and run, OUT/ARM-RUN/ holds: load.json (the load generator's report),
# arm.json (batch CPU seconds and bogo ops, switches, CPU busy shares, the
# apparatus's CPU seconds, whether the run is usable), batch.tsv (the
# antagonists' CPU seconds over time), decisions.jsonl and telemetry.jsonl (the
# daemon's decisions and the windows its controller saw) and the logs.
# OUT/meta.json says how it was run. Progress goes to stderr, one line per run.
#
# Environment: NODE (gpu, gpu-hostwork or cpu), PHASES (the load generator's --phases, with multiples of the
# capacity), SEED and BURSTINESS (the schedule), DRAIN, N_PREDICT (tokens a request), MODEL_SHAPE (the GPU
# nodes: the random llama's make_model.py arguments; the model is written at the start), NGL (the layers on
# the stand-in), MEASURED, APPARATUS, HOGS (antagonists), CALIBRATION_RUNS, CAPACITY_SECONDS (the capacity
# probe's length), SLO_SCALE, SLO_TTFT and SLO_TPOT
# (limits given, not measured), OBJECTIVE_MAX (the online arms' TTFT objective; default the TTFT limit),
# OBJECTIVE_TPOT (a TPOT limit the online arms' objective adds, a duration or "slo" for the calibration's;
# default none), ONLINE_POLICIES (the policies the online arms' daemons load; default "latency throughput"),
# STANDIN_NICE (the stand-in's nice, -20), SCRAPE_STATIC (1: the static arms scrape /metrics too), DETECTOR
# (its settings, JSON), PARAMS (live parameters, "POLICY.PARAM=VALUE ...", set with akts set in each arm whose
# daemon loads POLICY, before its load), LEARNER_STATE (the learner's state file, shared by its runs: default,
# each run's own), LIVE (arms whose requests and switches are
# printed to stderr as they happen: the demo). The model's shape, the hogs and the multiples of the capacity
# are the nodes' defaults (docs/serving.md); DETECTOR was chosen on the CPU-bound node's closed loop and kept.
# Folders of an earlier experiment in OUT are replaced arm by arm; start from an empty OUT to be sure.
set -uo pipefail
if (($# < 3)); then
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
OUT=$1
RUNS=$2
shift 2
ARMS=("$@")
NODE=${NODE:-gpu-hostwork}
case $NODE in
gpu | gpu-hostwork)
	PHASES=${PHASES:-steady:10s:0.15x,burst:6s:0.8x,steady:10s:0.15x}
	MODEL_SHAPE=${MODEL_SHAPE:---embd 128 --layers 2 --heads 2 --ff 256}
	N_PREDICT=${N_PREDICT:-8}
	if [[ $NODE == gpu ]]; then
		HOGS=${HOGS:-1}
		NGL=${NGL:-999}
	else
		HOGS=${HOGS:-2}
		NGL=${NGL:-1}
	fi
	;;
cpu)
	PHASES=${PHASES:-steady:8s:1:500ms,burst:8s:4,steady:8s:1:500ms}
	N_PREDICT=${N_PREDICT:-16}
	HOGS=${HOGS:-2}
	NGL=""
	;;
*)
	echo "[serving] error: NODE must be gpu, gpu-hostwork or cpu, not '$NODE'" >&2
	exit 2
	;;
esac
SEED=${SEED:-1}
BURSTINESS=${BURSTINESS:-1}
DRAIN=${DRAIN:-10s}
CALIBRATION_RUNS=${CALIBRATION_RUNS:-2}
CAPACITY_SECONDS=${CAPACITY_SECONDS:-8}
SLO_SCALE=${SLO_SCALE:-2}
OBJECTIVE_MAX=${OBJECTIVE_MAX:-}
OBJECTIVE_TPOT=${OBJECTIVE_TPOT:-}
ONLINE_POLICIES=${ONLINE_POLICIES:-latency throughput}
[[ $ONLINE_POLICIES =~ ^[a-z_]+( [a-z_]+)+$ ]] ||
	{ echo "[serving] error: ONLINE_POLICIES is two or more policy names, not '$ONLINE_POLICIES'" >&2; exit 2; }
STANDIN_NICE=${STANDIN_NICE:--20}
SCRAPE_STATIC=${SCRAPE_STATIC:-0}
[[ $SCRAPE_STATIC == 0 || $SCRAPE_STATIC == 1 ]] || { echo "[serving] error: SCRAPE_STATIC is 0 or 1, not '$SCRAPE_STATIC'" >&2; exit 2; }
[[ $STANDIN_NICE =~ ^-?[0-9]+$ ]] && ((STANDIN_NICE >= -20 && STANDIN_NICE <= 19)) ||
	{ echo "[serving] error: STANDIN_NICE is a nice value from -20 to 19, not '$STANDIN_NICE'" >&2; exit 2; }
read -ra PARAMS_KV <<<"${PARAMS:-}"  # words, never globbed
for kv in "${PARAMS_KV[@]}"; do
	[[ $kv =~ ^[a-z0-9_]+\.[a-z0-9_]+=.+$ ]] ||
		{ echo "[serving] error: PARAMS is POLICY.PARAM=VALUE words; '$kv' is not one" >&2; exit 2; }
done
PARAMS=${PARAMS_KV[*]}
MEASURED=${MEASURED:-0}
APPARATUS=${APPARATUS:-1}
# The detector's settings (docs/serving.md says why, from the closed-loop runs they were chosen on):
# llama-server's in-flight requests (busy at 2.5) and the TTFT objective; not LC demand, which the many
# waiting HTTP threads inflate under throughput even between bursts. Smoothed over about half a second.
DETECTOR=${DETECTOR:-'{"app_busy_requests": 2.5, "lc_busy_share": 0, "alpha_up": 0.5, "alpha_down": 0.25, "confirm": 2}'}
MODEL=/opt/akts/models/random-llama.gguf
RPC_PORT=50052
SOCK=/run/akts/serving.sock
AGENT_PORT=8081
mkdir -p "$OUT"
# Everything here runs on the apparatus CPU unless started elsewhere on purpose (the server, the antagonists).
taskset -cp "$APPARATUS" $$ >/dev/null

log() { echo "[serving] $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

for a in "${ARMS[@]}"; do
	case $a in
	alone | default | scx_simple | latency | latency_q250 | preempt | throughput | oracle | detector | bandit | learner | llm) ;;
	*) die "no arm named '$a' (arms: alone default scx_simple latency latency_q250 preempt throughput oracle detector bandit learner llm)" ;;
	esac
done
# The policies an akts arm's daemon loads (preempt's arm adds it as a third).
# The policies an arm's daemon loads: latency and throughput; preempt's arm adds it; the online arms load
# ONLINE_POLICIES (default the same two).
arm_policies() {
	case $1 in
	oracle | detector | bandit | learner | llm) echo "$ONLINE_POLICIES" ;;
	*) echo "latency throughput$([[ $1 == preempt ]] && echo ' preempt')" ;;
	esac
}
# A parameter of a policy no arm here loads would be set nowhere: a typo, refused before anything runs.
for kv in "${PARAMS_KV[@]}"; do
	loaded=""
	for a in "${ARMS[@]}"; do
		[[ $a == alone || $a == default || $a == scx_simple ]] && continue
		[[ " $(arm_policies "$a") " == *" ${kv%%.*} "* ]] && loaded=1
	done
	[[ -n $loaded ]] || die "PARAMS: no arm here loads a policy named '${kv%%.*}' ($kv)"
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a whole number, 1 or more (not '$RUNS')"
[[ $CAPACITY_SECONDS =~ ^[1-9][0-9]*$ ]] || die "CAPACITY_SECONDS must be a whole number of seconds (not '$CAPACITY_SECONDS')"
[[ $CALIBRATION_RUNS =~ ^[1-9][0-9]*$ ]] || die "CALIBRATION_RUNS must be a whole number, 1 or more (not '$CALIBRATION_RUNS')"
[[ -z $NGL || $NGL =~ ^[0-9]+$ ]] || die "NGL must be a number of layers (not '$NGL')"
[[ -f $MODEL ]] || die "$MODEL is missing: ./akts setup rebuilds the image"
rm -rf "$OUT/calibration" # a calibration of an earlier run in OUT is not this one's
CALIBRATE=$(dirname "$(readlink -f "$0")")/calibrate.py
[[ -f $CALIBRATE ]] || die "$CALIBRATE is missing (it comes with experiment.sh)"
RPC_SERVER=""
GPU=0
[[ $NODE == gpu || $NODE == gpu-hostwork ]] && GPU=1
if ((GPU)); then
	# Debian installs llama.cpp's extra tools outside PATH.
	for c in "$(command -v ggml-rpc-server)" /usr/libexec/*/llama/bin/ggml-rpc-server; do
		[[ -n $c && -x $c ]] && RPC_SERVER=$c && break
	done
	[[ -n $RPC_SERVER ]] || die "ggml-rpc-server is not in the guest (package llama.cpp-tools-extra): ./akts setup rebuilds the image"
	# The GPU node's model, written for this experiment (make_model.py is seeded: the same file every time).
	MODEL=/tmp/akts-gpu-model.gguf
	# shellcheck disable=SC2086 # MODEL_SHAPE is a list of arguments
	python3 /opt/akts/make_model.py "$MODEL" $MODEL_SHAPE >"$OUT/model.log" 2>&1 ||
		die "make_model.py $MODEL_SHAPE failed: $(tail -n 3 "$OUT/model.log" | tr '\n' ' ')"
fi
has_arm() {
	local a
	for a in "${ARMS[@]}"; do [[ $a == "$1" ]] && return 0; done
	return 1
}
has_arm scx_simple && ! command -v scx_simple >/dev/null && die "scx_simple is not in the guest"

# The oracle's phases: latency for a phase busier than the lightest, throughput for the others, on the load's
# own clock (the load generator says each phase as it begins). Checked here, written once the load's rates are
# known (the calibration).
python3 "$CALIBRATE" oracle "$PHASES" >"$OUT/oracle.json" || die "PHASES '$PHASES' is not NAME:DURATION:LOAD[:THINK],..."

# How it was run, with the versions of what ran (the image follows sid: a new llama.cpp can move every figure);
# written before the servers start and again once they are up, with what the GPU node's checks found.
versions=$(dpkg-query -W -f='${db:Status-Abbrev}${Package}=${Version}\n' llama.cpp-tools llama.cpp-tools-extra libllama0 libggml0 \
	libggml0-backend-cpu libggml0-backend-rpc stress-ng 2>/dev/null | sed -n 's/^ii *//p')
offloaded=""
rpc_connected=""
LOAD_PHASES=""  # PHASES with the capacity's multiples turned into rates (the calibration)
write_meta() {
	python3 - "$OUT/meta.json" "$PHASES" "$RUNS" "$MEASURED" "$APPARATUS" "$HOGS" "$N_PREDICT" "$NODE" \
		"${MODEL_SHAPE:-}" "$OBJECTIVE_MAX" "$DETECTOR" "$offloaded" "$rpc_connected" "$versions" "$NGL" "$LOAD_PHASES" \
		"$SEED" "$BURSTINESS" "$DRAIN" "$OUT/calibration/calibration.json" "$PARAMS" "$STANDIN_NICE" "$OBJECTIVE_TPOT" \
		"$ONLINE_POLICIES" "${ARMS[@]}" <<'PY' ||
import json, os, sys
(path, phases, runs, measured, apparatus, hogs, n_predict, node, shape, objective, detector, offloaded,
 connected, versions, ngl, load_phases, seed, burstiness, drain, calibration, params, standin_nice,
 objective_tpot, online_policies, *arms) = sys.argv[1:]
try:
    cal = json.load(open(calibration))
except (OSError, ValueError):
    cal = None
json.dump({"phases": phases, "load_phases": load_phases or None, "runs": int(runs), "arms": arms,
           "kernel": os.uname().release, "node": node, "ngl": int(ngl) if ngl else None,
           "seed": int(seed), "burstiness": float(burstiness), "drain": drain, "calibration": cal,
           "model_shape": shape or None, "offloaded": offloaded or None,
           "rpc_connected": {"true": True, "false": False}.get(connected),
           "objective_max": objective, "objective_tpot": objective_tpot or None,
           "online_policies": online_policies.split(), "detector": json.loads(detector),
           "params": dict(w.split("=", 1) for w in params.split()),
           "standin_nice": int(standin_nice) if node != "cpu" else None,
           "versions": dict(l.split("=", 1) for l in versions.splitlines() if "=" in l),
           "measured_cpus": measured, "apparatus_cpus": apparatus, "antagonists": int(hogs),
           "n_predict": int(n_predict), "cpus": os.cpu_count()}, open(path, "w"), indent=1)
PY
		die "cannot write $OUT/meta.json (is DETECTOR valid JSON? '$DETECTOR')"
}
write_meta

RPC=""
SERVER=""
AGENT=""
probe=""
offload=()
cleanup() {
	kill ${SERVER:+"$SERVER"} ${AGENT:+"$AGENT"} ${probe:+"$probe"} ${RPC:+"$RPC"} 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT
if ((GPU)); then
	# The stand-in for the accelerator, on the apparatus CPU in the fair class (the daemon's classes name
	# llama-server and stress-ng only, and partial mode leaves every other task where it is), at nice
	# STANDIN_NICE (-20): an accelerator is nobody else's, so the apparatus beside it (the daemon, the load
	# generator) must not slow it. At nice 0 it did, and only in the akts arms, the ones with a daemon: the
	# stand-in waited on the run queue 3-4 times as long as under the default (docs/serving.md).
	nice -n "$STANDIN_NICE" taskset -c "$APPARATUS" "$RPC_SERVER" -H 127.0.0.1 -p "$RPC_PORT" -t 1 >"$OUT/rpc-server.log" 2>&1 &
	RPC=$!
	for _ in $(seq 1 100); do (: <"/dev/tcp/127.0.0.1/$RPC_PORT") 2>/dev/null && break; sleep 0.2; done
	# The nice it runs at (field 19 of /proc/PID/stat), not the one asked for: nice only warns when it cannot.
	read -r rpc_stat <"/proc/$RPC/stat" 2>/dev/null
	read -ra rpc_f <<<"${rpc_stat##*) }"
	[[ ${rpc_f[16]:-} == "$STANDIN_NICE" ]] || die "the stand-in runs at nice '${rpc_f[16]:-?}', not $STANDIN_NICE"
	(: <"/dev/tcp/127.0.0.1/$RPC_PORT") 2>/dev/null || die "ggml-rpc-server did not listen on port $RPC_PORT: $(tail -n 3 "$OUT/rpc-server.log" | tr '\n' ' ')"
	offload=(--rpc "127.0.0.1:$RPC_PORT" -ngl "$NGL")
	# The layers the node puts on the stand-in (NGL: every one on gpu, one on gpu-hostwork), or the node is not
	# the one it claims to be. llama-server says where its
	# layers went only at verbosity 4, which also logs every request: the same model, context, slots, threads
	# and offload once more at that verbosity, on another port, until it has loaded the model (the measured
	# server logs at its default).
	taskset -c "$MEASURED" llama-server -m "$MODEL" --host 127.0.0.1 --port 8079 -c 8192 -np 8 -t 1 "${offload[@]}" \
		-lv 4 >"$OUT/llama-server-offload.log" 2>&1 &
	probe=$!
	for _ in $(seq 1 240); do curl -sf http://127.0.0.1:8079/health >/dev/null && break; sleep 0.5; done
	kill "$probe" 2>/dev/null
	wait "$probe" 2>/dev/null
	probe=""
	offloaded=$(grep -oE 'offloaded [0-9]+/[0-9]+ layers' "$OUT/llama-server-offload.log" | tail -n 1)
	[[ $offloaded =~ offloaded\ ([0-9]+)/([0-9]+)\ layers ]] ||
		die "llama-server said nothing of its offload ('no offload line' in $OUT/llama-server-offload.log)"
	want=$((NGL < BASH_REMATCH[2] ? NGL : BASH_REMATCH[2]))
	((BASH_REMATCH[1] == want)) ||
		die "llama-server offloaded ${BASH_REMATCH[1]} of ${BASH_REMATCH[2]} layers to the rpc server, not the $want the $NODE node configures (NGL=$NGL; $OUT/llama-server-offload.log)"
	[[ $NODE == gpu-hostwork ]] && ((want >= BASH_REMATCH[2])) &&
		die "the gpu-hostwork node keeps part of the model on the host CPU: NGL=$NGL offloads all ${BASH_REMATCH[2]} layers"
	grep -qE "RPC[0-9]*\[127\.0\.0\.1:$RPC_PORT\] model buffer" "$OUT/llama-server-offload.log" ||
		die "llama-server put no model buffer on the rpc server ($OUT/llama-server-offload.log)"
fi

# The server under test, on the measured CPU; -np and --threads-http above the
# burst's concurrency so requests queue in the server, where the scheduler acts.
taskset -c "$MEASURED" llama-server -m "$MODEL" --host 127.0.0.1 --port 8080 -c 8192 -np 8 --threads-http 16 -t 1 \
	"${offload[@]}" --metrics >"$OUT/llama-server.log" 2>&1 &
SERVER=$!
if has_arm llm; then
	# The llm controller's model server: the same random-weight model (its
	# answers are noise), on the apparatus CPU, under its own name so the
	# class rules do not take it for the server under test.
	ln -sf "$(command -v llama-server)" /tmp/akts-agent-llm
	taskset -c "$APPARATUS" /tmp/akts-agent-llm -m "$MODEL" --host 127.0.0.1 --port $AGENT_PORT -c 2048 -np 1 -t 1 \
		>"$OUT/agent-server.log" 2>&1 &
	AGENT=$!
fi
for port in 8080 ${AGENT:+$AGENT_PORT}; do
	for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
	curl -sf "http://127.0.0.1:$port/health" >/dev/null || die "llama-server on port $port did not start"
done
if ((GPU)); then
	# The measured server itself holds a connection to the stand-in (not only the probes before it).
	if ss -tnpH state established "( dport = :$RPC_PORT )" 2>/dev/null | grep -q "pid=$SERVER,"; then
		rpc_connected=true
	else
		rpc_connected=false
		write_meta
		die "llama-server (pid $SERVER) holds no connection to the rpc server on port $RPC_PORT"
	fi
fi
write_meta

# CPU seconds (user + system) of the given pids, with builtins only (no fork
# per sample): fields 14 and 15 of /proc/PID/stat, after the ')' of the name.
HZ=$(getconf CLK_TCK)
cpu_ticks() {
	local pid line rest total=0
	for pid in "$@"; do
		read -r line <"/proc/$pid/stat" 2>/dev/null || continue
		rest=${line##*) }
		read -ra f <<<"$rest"
		total=$((total + f[11] + f[12]))
	done
	echo "$total"
}
# Busy and total jiffies of the CPUs in a taskset list ("0", "1", "0-1").
cpu_busy() {
	local list=$1 busy=0 total=0 name u n s idle io irq sirq steal
	while read -r name u n s idle io irq sirq steal _; do
		[[ $name =~ ^cpu([0-9]+)$ ]] || continue
		in_list "${BASH_REMATCH[1]}" "$list" || continue
		busy=$((busy + u + n + s + irq + sirq + steal))
		total=$((total + u + n + s + idle + io + irq + sirq + steal))
	done </proc/stat
	echo "$busy $total"
}
in_list() {
	local c=$1 part
	IFS=, read -ra parts <<<"$2"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then
			((c >= ${part%-*} && c <= ${part#*-})) && return 0
		elif ((c == part)); then
			return 0
		fi
	done
	return 1
}
# Until no BPF scheduler is attached (a run must not start on the previous arm's).
wait_detached() {
	for _ in $(seq 1 100); do [[ $(cat /sys/kernel/sched_ext/state) == disabled ]] && return 0; sleep 0.1; done
	log "a BPF scheduler is still attached: $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
}

# The antagonists' CPU seconds, sampled every 0.25 s into a file ("UNIX_TIME
# SECONDS" lines), until killed.
sample_batch() {
	local file=$1 hz=$2 ms
	shift 2
	while true; do
		ms=$(($(cpu_ticks "$@") * 1000 / hz))
		printf '%s %d.%03d\n' "$EPOCHREALTIME" $((ms / 1000)) $((ms % 1000)) >>"$file"
		sleep 0.25
	done
}

daemon_config() {
	local arm=$1 dir=$2 ctl=none initial=throughput
	local qt=off
	[[ $arm == latency || $arm == preempt ]] && initial=$arm
	[[ $arm == latency_q250 ]] && initial=latency qt=250us
	# Two policies, as the controllers' arms were measured with (the bandit and the learner try every slot);
	# preempt's arm loads it as a third.
	# The oracle follows the load's phases as the load generator says them: chosen from the start, it waits
	# for the first.
	[[ $arm == oracle || $arm == detector || $arm == bandit || $arm == learner || $arm == llm ]] && ctl=$arm
	# A static arm reads nothing from the server: its daemon does not scrape /metrics (llama-server answers a
	# scrape on its main loop, on the measured CPU: 10 a second is a cost only the switching arms have to pay).
	# The oracle, which switches on the load's phases, scrapes as the controllers it is the reference for do.
	# SCRAPE_STATIC=1 makes the static arms scrape too, to read what the server says under each policy in their
	# telemetry (as the detector's threshold was chosen), at that cost.
	cat <<JSON
{"socket": "$SOCK", "switch_all": $([[ $NODE == cpu ]] && echo true || echo false), "policies": [$(arm_policies "$arm" | sed 's/[a-z_][a-z_]*/"&"/g; s/ /, /g')], "initial": "$initial",
 "objective": $(if [[ -n $OBJECTIVE_TPOT ]]; then echo "{\"ttft_p99\": \"$OBJECTIVE_MAX\", \"tpot_p99\": \"$OBJECTIVE_TPOT\"}"
                else echo "{\"signal\": \"request_latency_p99\", \"max\": \"$OBJECTIVE_MAX\"}"; fi),
 "telemetry": {$([[ $ctl != none || $SCRAPE_STATIC == 1 ]] && echo '"metrics_url": "http://127.0.0.1:8080/metrics", ')"metrics_timeout": "1s"},
 "controller": {"name": "$ctl", "min_dwell": "500ms",
                "oracle": {"schedule": "$OUT/oracle.json"},
                "detector": $DETECTOR,
                "learner": {"state": "${LEARNER_STATE:-$dir/learner.json}"},
                "llm": {"endpoint": "http://127.0.0.1:$AGENT_PORT", "timeout": "5s", "decide_every": 30}},
 "decision_log": {"path": "$dir/decisions.jsonl"},
 "breaker": {"armed": false},
 "guard": {"quantum_timer": "$qt"},
 "classes": [{"class": "lc", "comm": "llama-server"}, {"class": "be", "comm": "stress-ng"},
             {"class": "be", "comm": "stress-ng-cpu"}]}
JSON
}

# Stops a child process: the signal, then up to 10 s, then SIGKILL; its exit status in STOP_RC (not in a
# $(...): a subshell cannot wait for its parent's children).
stop_proc() {
	local pid=$1 sig=$2
	kill "-$sig" "$pid" 2>/dev/null
	for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	STOP_RC=$?
}
# threads_ext WANT PID...: the threads of the given processes whose SCHED_EXT membership (policy 7, field 41 of
# /proc/TID/stat) is not WANT ("in" or "out"), as "comm:tid" words ("gone:PID" for a process that is not
# there); empty when every thread is as wanted.
threads_ext() {
	local want=$1 pid st line rest in
	shift
	for pid in "$@"; do
		[[ -d /proc/$pid/task ]] || { printf 'gone:%s ' "$pid"; continue; }
		for st in /proc/"$pid"/task/*/stat; do
			read -r line <"$st" 2>/dev/null || continue
			rest=${line##*) }
			read -ra f <<<"$rest"
			in=out
			((f[38] == 7)) && in=in
			[[ $in == "$want" ]] && continue
			line=${line#*(}
			st=${st%/stat}
			printf '%s:%s ' "${line%%)*}" "${st##*/}"
		done
	done
}
# Nanoseconds the given process's threads have waited on a run queue (field 2 of /proc/PID/task/TID/schedstat):
# the stand-in's share of the apparatus CPU, which its CPU time cannot show.
# Empty when the process or its schedstat files are gone (the run's figure is then null, not 0).
runq_ns() {
	local st run wait total=0 seen=0
	for st in /proc/"$1"/task/*/schedstat; do
		read -r run wait _ <"$st" 2>/dev/null || continue
		total=$((total + wait))
		seen=1
	done
	((seen)) && echo "$total"
}
sched_ops() { echo "$(cat /sys/kernel/sched_ext/state 2>/dev/null):$(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"; }
healthy() { curl -sf -m 5 http://127.0.0.1:8080/health >/dev/null && echo true || echo false; }

run_arm() {
	local arm=$1 run=$2 order=$3
	local dir="$OUT/$arm-$run" dpid="" hogs="" peer="" sampler="" label=null error="" expected=""
	rm -rf "$dir" && mkdir -p "$dir"
	wait_detached
	local health0 workers=()
	health0=$(healthy)
	if [[ $arm != alone ]]; then
		taskset -c "$MEASURED" stress-ng --cpu "$HOGS" --metrics-brief --timeout 600s >"$dir/stress-ng.log" 2>&1 &
		hogs=$!
		# Every worker, or the batch work is undercounted (a fork can be slow under TCG).
		for _ in $(seq 1 50); do
			sleep 0.2
			mapfile -t workers < <(pgrep -P "$hogs")
			((${#workers[@]} >= HOGS)) && break
		done
		((${#workers[@]} == HOGS)) || error="stress-ng started ${#workers[@]} workers, not $HOGS"
		sleep 0.5
	fi
	case $arm in
	alone | default) label='"default (EEVDF)"' ;;
	scx_simple)
		label='"scx_simple"'
		expected=simple
		taskset -c "$APPARATUS" scx_simple >"$dir/scx_simple.log" 2>&1 &
		peer=$!
		for _ in $(seq 1 100); do [[ $(sched_ops) == enabled:simple ]] && break; sleep 0.1; done
		;;
	*)
		expected=akts
		daemon_config "$arm" "$dir" >"$dir/akts.json"
		taskset -c "$APPARATUS" akts daemon -c "$dir/akts.json" >"$dir/daemon.log" 2>&1 &
		dpid=$!
		for _ in $(seq 1 100); do [[ -S $SOCK ]] && akts status --socket $SOCK >/dev/null 2>&1 && break; sleep 0.1; done
		# PARAMS: live parameters, each set before the load in every arm whose daemon loads its policy.
		local kv
		for kv in "${PARAMS_KV[@]}"; do
			[[ " $(arm_policies "$arm") " == *" ${kv%%.*} "* ]] || continue
			akts set --socket $SOCK "${kv%%=*}" "${kv#*=}" >>"$dir/params.log" 2>&1 ||
				error=${error:-"PARAMS: akts set ${kv%%=*} ${kv#*=} was refused (params.log)"}
		done
		sleep 1
		if ((GPU)); then
			# Partial mode: the daemon moves llama-server's threads and the antagonists into SCHED_EXT.
			local left=""
			for _ in $(seq 1 50); do
				left=$(threads_ext in "$SERVER" "${workers[@]}")
				[[ -z $left ]] && break
				sleep 0.1
			done
			[[ -z $left ]] || error="partial mode: not in SCHED_EXT after 5 s: ${left:0:200}"
			# ... and leaves the stand-in in the fair class: the policy under test never schedules the "GPU".
			local stray
			stray=$(threads_ext out "$RPC")
			[[ -n $error || -z $stray ]] || error="partial mode: the stand-in is not all in the fair class: ${stray:0:200}"
		fi
		;;
	esac
	local ops0 ops1
	ops0=$(sched_ops)
	if ((${#workers[@]})); then
		taskset -c "$APPARATUS" bash -c "$(declare -f cpu_ticks sample_batch); sample_batch '$dir/batch.tsv' $HZ ${workers[*]}" >/dev/null 2>&1 &
		sampler=$!
	fi
	local push=() c0 c1 m0 m1 a0 a1 d0=0 d1=0 g0=0 g1=0 r0=0 r1=0 q0=0 q1=0 s0 s1 t0
	[[ -n $dpid ]] && push=(--push-socket $SOCK)
	c0=$(cpu_ticks "${workers[@]}")
	m0=$(cpu_busy "$MEASURED")
	a0=$(cpu_busy "$APPARATUS")
	[[ -n $dpid ]] && d0=$(cpu_ticks "$dpid")
	[[ $arm == llm ]] && g0=$(cpu_ticks "$AGENT")
	if [[ -n $RPC ]]; then
		kill -0 "$RPC" 2>/dev/null || error=${error:-"the rpc server (the stand-in) is gone"}
		r0=$(cpu_ticks "$RPC")
		q0=$(runq_ns "$RPC")
	fi
	s0=$(cpu_ticks "$SERVER")
	t0=$EPOCHREALTIME
	local live=0 follower="" quiet=(--quiet)
	[[ " ${LIVE:-} " == *" $arm "* ]] && live=1 && quiet=()
	if ((live)) && [[ -n $dpid ]]; then
		# Each decision as the daemon makes it (the first line: the controller it started with).
		taskset -c "$APPARATUS" akts log --socket $SOCK --follow -n 1 >&2 &
		follower=$!
	fi
	local TIMEFORMAT='%U %S'
	{ time taskset -c "$APPARATUS" akts loadgen --url http://127.0.0.1:8080 "${LOADGEN[@]}" \
		"${quiet[@]}" "${push[@]}" --out "$dir/load.json" 2>&1 |
		if ((live)); then tee "$dir/load.txt" >&3; else cat >"$dir/load.txt"; fi; } 3>&2 2>"$dir/loadgen.time"
	[[ -n $follower ]] && stop_proc "$follower" TERM
	c1=$(cpu_ticks "${workers[@]}")
	m1=$(cpu_busy "$MEASURED")
	a1=$(cpu_busy "$APPARATUS")
	[[ -n $dpid ]] && d1=$(cpu_ticks "$dpid")
	[[ $arm == llm ]] && g1=$(cpu_ticks "$AGENT")
	if [[ -n $RPC ]]; then
		kill -0 "$RPC" 2>/dev/null || error=${error:-"the rpc server (the stand-in) died during the load"}
		r1=$(cpu_ticks "$RPC")
		q1=$(runq_ns "$RPC")
	fi
	s1=$(cpu_ticks "$SERVER")
	local t1=$EPOCHREALTIME
	ops1=$(sched_ops)
	[[ -n $sampler ]] && stop_proc "$sampler" TERM
	local alive=null drc=null
	if [[ -n $dpid ]]; then
		# What the controllers saw: the telemetry windows of the run (600 kept: 60 s at 100 ms).
		akts telemetry --socket $SOCK -n 600 --json >"$dir/telemetry.jsonl" 2>/dev/null
		# The controller's own counts (the decision log writes a repeated refusal once).
		akts controller --socket $SOCK --json >"$dir/controller.json" 2>/dev/null
		kill -0 "$dpid" 2>/dev/null && alive=true || alive=false
		stop_proc "$dpid" TERM
		drc=$STOP_RC
	fi
	[[ -n $peer ]] && stop_proc "$peer" INT
	local bogo=null stress_s=null
	if [[ -n $hogs ]]; then
		stop_proc "$hogs" INT
		# stress-ng's --metrics-brief line: "stress-ng: metrc: [pid] cpu  BOGO  REAL  USR  SYS  ..."
		read -r bogo stress_s < <(awk '$3 ~ /^\[/ && $4 == "cpu" && $5 ~ /^[0-9]+$/ { print $5, $7 + $8; exit }' "$dir/stress-ng.log")
		[[ -n $bogo ]] || bogo=null
		[[ -n $stress_s ]] || stress_s=null
	fi
	local health1
	health1=$(healthy)
	ARM=$arm RUN=$run ORDER=$order LABEL=$label C0=$c0 C1=$c1 HZ_=$HZ BOGO=$bogo STRESS_S=$stress_s \
		MB="$m0 $m1" AB="$a0 $a1" D0=$d0 D1=$d1 G0=$g0 G1=$g1 T0=$t0 T1=$t1 HAS_DAEMON=$([[ -n $dpid ]] && echo 1 || echo 0) \
		HAS_AGENT=$([[ $arm == llm ]] && echo 1 || echo 0) ERROR=$error EXPECTED=$expected OPS0=$ops0 OPS1=$ops1 \
		ALIVE=$alive DRC=$drc R0=$r0 R1=$r1 Q0=$q0 Q1=$q1 S0=$s0 S1=$s1 HAS_RPC=$([[ -n $RPC ]] && echo 1 || echo 0) HEALTH0=$health0 HEALTH1=$health1 WORKERS=${#workers[@]} \
		python3 - "$dir" <<'PY'
import json, os, sys
from datetime import datetime, timezone
d = sys.argv[1]
e = os.environ
arm, hz, has_daemon = e["ARM"], int(e["HZ_"]), e["HAS_DAEMON"] == "1"
t0, t1 = float(e["T0"]), float(e["T1"])
def busy(pair):
    b0, a0, b1, a1 = map(int, pair.split())
    return round((b1 - b0) / max(1, a1 - a0), 4)
# Was the scheduler this arm names attached for the whole load (and nothing for the default)?
expected = e["EXPECTED"] or None
want = "enabled:" + expected if expected else "disabled:"
ok = e["OPS0"] == want and e["OPS1"] == want
why = "" if ok else "sched_ext was %r at the load's start and %r at its end, not %r" % (e["OPS0"], e["OPS1"], want)
if ok and has_daemon and e["ALIVE"] != "true":
    ok, why = False, "the akts daemon was gone before the load ended"
error = e["ERROR"] or None
slots = (["latency", "throughput"] + (["preempt"] if arm == "preempt" else [])) if has_daemon else []
# Switches a controller applied while the load ran (not the config's or the operator's records).
switches = 0
try:
    lines = open(os.path.join(d, "decisions.jsonl")).read().splitlines()
except OSError:
    lines = []
for l in lines:
    try:
        r = json.loads(l)
        at = datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
    except (ValueError, KeyError, TypeError, AttributeError):
        continue
    if (r.get("type") == "decision" and r.get("applied") is True and r.get("action") != "controller"
            and r.get("source") not in ("operator", "config") and t0 <= at <= t1):
        switches += 1
try:
    user, sys_ = (float(x) for x in open(os.path.join(d, "loadgen.time")).read().split()[-2:])
    loadgen = round(user + sys_, 3)
except (OSError, ValueError):
    loadgen = None
initial = None
if has_daemon:
    try:
        initial = json.load(open(os.path.join(d, "akts.json")))["initial"]
    except (OSError, ValueError, KeyError):
        pass
controller = None
try:
    c = json.load(open(os.path.join(d, "controller.json")))
    controller = {"name": c.get("controller"), "decisions": c.get("decisions"), "applied": c.get("applied"),
                  "refused_outputs": c.get("refused_outputs"), "repeats_not_logged": c.get("repeats_not_logged"),
                  "answered": (c.get("controller_state") or {}).get("answered")}
except (OSError, ValueError, AttributeError):
    pass
started = None
try:
    started = json.load(open(os.path.join(d, "load.json")))["started_unix"]
except (OSError, ValueError, KeyError):
    pass
num = lambda k: None if e[k] in ("", "null") else float(e[k])
json.dump({"arm": arm, "run": int(e["RUN"]), "order": int(e["ORDER"]), "antagonists": arm != "alone",
           "error": error, "workers": int(e["WORKERS"]),
           "attach": {"expected": expected, "ops_start": e["OPS0"], "ops_end": e["OPS1"], "ok": ok, "why": why},
           "server_healthy": {"before": e["HEALTH0"] == "true", "after": e["HEALTH1"] == "true"},
           "daemon_exit": None if e["DRC"] == "null" else int(e["DRC"]),
           "batch_cpu_s": round((int(e["C1"]) - int(e["C0"])) / hz, 3),
           "bogo_ops": None if e["BOGO"] == "null" else int(e["BOGO"]), "stress_cpu_s": num("STRESS_S"),
           "switches": switches, "controller": controller, "slots": slots, "initial": initial, "label": json.loads(e["LABEL"]),
           "load_wall_s": round(t1 - t0, 3),
           "cpu_busy": {"measured": busy(e["MB"]), "apparatus": busy(e["AB"])},
           # The GPU node's like-for-like figures: the stand-in's and llama-server's CPU seconds over the load.
           "standin_cpu_s": round((int(e["R1"]) - int(e["R0"])) / hz, 3) if e["HAS_RPC"] == "1" else None,
           "standin_runq_s": round((int(e["Q1"]) - int(e["Q0"])) / 1e9, 3)
           if e["HAS_RPC"] == "1" and e["Q0"] and e["Q1"] else None,
           "server_cpu_s": round((int(e["S1"]) - int(e["S0"])) / hz, 3),
           "apparatus_cpu_s": {"loadgen": loadgen,
                               "daemon": round((int(e["D1"]) - int(e["D0"])) / hz, 3) if has_daemon else None,
                               "llm_server": round((int(e["G1"]) - int(e["G0"])) / hz, 3)
                               if e["HAS_AGENT"] == "1" else None}},
          open(os.path.join(d, "arm.json"), "w"), indent=1)
s = {}
try:
    ph = json.load(open(os.path.join(d, "load.json")))["phases"]
    b = [p for p in ph if p["name"] == "burst"] or ph
    s = {"p50": b[0]["median_ttft_ms"], "n": b[0]["completed"]}
except (OSError, ValueError, KeyError, IndexError):
    pass
a = json.load(open(os.path.join(d, "arm.json")))
trouble = error or ("" if ok else why) or ("" if a["server_healthy"]["after"] else "llama-server stopped answering")
print("burst TTFT p50 %s ms, %s burst requests, batch %.1f CPU s over the run's bracket, %d switches%s" % (
    round(s["p50"]) if "p50" in s else "?", s.get("n", "?"), a["batch_cpu_s"], a["switches"],
    "  [RUN UNUSABLE: %s]" % trouble if trouble else ""))
PY
}

# A warm-up the report never sees: the server's first requests (page faults, caches) go to no arm.
taskset -c "$APPARATUS" akts loadgen --url http://127.0.0.1:8080 --phases warmup:3s:2 --n-predict "$N_PREDICT" \
	--quiet >"$OUT/warmup.txt" 2>&1 || log "the warm-up load failed: $(tail -n 2 "$OUT/warmup.txt" | tr '\n' ' ')"

# The calibration, alone (no antagonists, no BPF scheduler), before any arm: the load's rates from the
# machine's capacity, and the objective's limits from alone's TTFT and TPOT under that load.
cal=$OUT/calibration
rm -rf "$cal" && mkdir -p "$cal"
wait_detached
LOAD_PHASES=$PHASES
capacity=""
if [[ $PHASES =~ :[0-9.]+x(,|:|$) ]]; then
	taskset -c "$APPARATUS" akts loadgen --url http://127.0.0.1:8080 --phases "capacity:${CAPACITY_SECONDS}s:6" \
		--n-predict "$N_PREDICT" --drain 5s --quiet --out "$cal/capacity.json" >"$cal/capacity.txt" 2>&1
	capacity=$(python3 "$CALIBRATE" capacity "$cal/capacity.json" 2>&1) || die "the capacity probe: $capacity"
	LOAD_PHASES=$(python3 "$CALIBRATE" phases "$PHASES" "$capacity" 2>&1) || die "$LOAD_PHASES"
	log "calibration: alone, 6 users complete $capacity requests/s: the load is $LOAD_PHASES"
fi
python3 "$CALIBRATE" oracle "$LOAD_PHASES" >"$OUT/oracle.json" || die "cannot write the oracle's phases"
LOADGEN=(--phases "$LOAD_PHASES" --n-predict "$N_PREDICT" --seed "$SEED" --burstiness "$BURSTINESS" --drain "$DRAIN")
cal_runs=()
for i in $(seq 1 "$CALIBRATION_RUNS"); do
	taskset -c "$APPARATUS" akts loadgen --url http://127.0.0.1:8080 "${LOADGEN[@]}" --quiet --out "$cal/alone-$i.json" \
		>"$cal/alone-$i.txt" 2>&1 || log "calibration run $i: the load generator failed: $(tail -n 2 "$cal/alone-$i.txt" | tr '\n' ' ')"
	[[ -f $cal/alone-$i.json ]] && cal_runs+=("$cal/alone-$i.json")
done
limits=$(python3 "$CALIBRATE" limits "$SLO_SCALE" "${cal_runs[@]}" 2>&1) || die "the calibration's limits: $limits"
SLO_TTFT=${SLO_TTFT:-$(python3 -c 'import json,sys; print("%.1fms" % json.loads(sys.argv[1])["ttft_ms"])' "$limits")}
SLO_TPOT=${SLO_TPOT:-$(python3 -c 'import json,sys; t=json.loads(sys.argv[1])["tpot_ms"]; print("%.1fms" % t if t else "")' "$limits")}
OBJECTIVE_MAX=${OBJECTIVE_MAX:-$SLO_TTFT}
if [[ $OBJECTIVE_TPOT == slo ]]; then
	[[ -n $SLO_TPOT ]] || die "OBJECTIVE_TPOT=slo: the calibration measured no TPOT limit"
	OBJECTIVE_TPOT=$SLO_TPOT
fi
LOADGEN+=(--slo-ttft "$SLO_TTFT")
[[ -n $SLO_TPOT ]] && LOADGEN+=(--slo-tpot "$SLO_TPOT")
CAPACITY_SECONDS=$CAPACITY_SECONDS python3 - "$cal/calibration.json" "$limits" "$capacity" "$PHASES" "$LOAD_PHASES" "$SLO_TTFT" "$SLO_TPOT" "$OBJECTIVE_MAX" \
	"$SLO_SCALE" <<'PY' || die "cannot write $cal/calibration.json"
import json, os, sys
path, limits, capacity, phases, load_phases, ttft, tpot, objective, scale = sys.argv[1:]
measured = json.loads(limits)
json.dump({"capacity_rps": float(capacity) if capacity else None,
           "capacity_from": "a closed loop of 6 users for %s s, alone" % os.environ["CAPACITY_SECONDS"] if capacity else None,
           "phases": phases, "load_phases": load_phases, "measured": measured,
           "slo": {"ttft": ttft, "tpot": tpot or None}, "objective_max": objective,
           "slo_given": {"ttft": ttft != "%.1fms" % measured["ttft_ms"],
                         "tpot": bool(tpot) and (measured["tpot_ms"] is None or tpot != "%.1fms" % measured["tpot_ms"])}},
          open(path, "w"), indent=1)
PY
log "calibration: objective TTFT <= $SLO_TTFT${SLO_TPOT:+, TPOT <= $SLO_TPOT} ($(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["from"])' "$limits")); the online arms' objective TTFT $OBJECTIVE_MAX${OBJECTIVE_TPOT:+, TPOT $OBJECTIVE_TPOT} over $ONLINE_POLICIES"
write_meta
total=$((RUNS * ${#ARMS[@]}))
k=0
for run in $(seq 1 "$RUNS"); do
	# Each run starts one arm further along the list, so no arm always comes first or after the same one.
	n=${#ARMS[@]}
	for ((i = 0; i < n; i++)); do
		arm=${ARMS[$(((i + run - 1) % n))]}
		line=$(run_arm "$arm" "$run" "$k")
		k=$((k + 1))
		log "$k/$total run $run $arm: $line"
	done
done
log "done: $total runs in $SECONDS s"
