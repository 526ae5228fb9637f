#!/bin/bash
# The policy x workload matrix in the guest (issue 13): raw results for bench/plot_matrix.py.
#
#   matrix.sh OUT ROW...
#
# Rows: default (the kernel's EEVDF, nothing attached), the kernel's tools/sched_ext peers scx_simple,
# scx_central and scx_flatcg (each schedules every task), and akts library policies by name (latency,
# preempt, throughput, fifo, rr, wrr, ljf, wfair, share, srpt, central). The akts rows run under daemons that manage
# every task (switch_all, like the peers), up to eight policies per daemon, one row after another by
# `akts switch`, with the apparatus (this script and its children) classified LC. The circuit breaker is
# disarmed (a fixed policy is the row: a breaker that took over would blur it), the frame's bounded wait
# stays on, and the quantum timer enforces quanta below the tick (250 us).
#
# Workloads, in each row (WORKLOADS, default all):
#   hackbench    `akts workload hackbench` (BE): seconds for 100 loops per HB_SECONDS
#   cyclictest   `akts workload wakeup_latency`: cyclictest (LC) beside stress-ng on every CPU (BE)
#   sysbench     `akts workload cpu_throughput`: sysbench cpu on every CPU (BE), events/s
#   bimodal      `akts bench bimodal` (LC) at LOADS: p99.9 slowdown and goodput; srpt's row hints each size
#   colocation   as many LC busy loops as CPUs beside as many BE ones, for COLOC_SECONDS: the LC loops' share
#                of their CPU time; in share's row once per target in SHARE_TARGETS (`akts set
#                share.lc_share`), in the others once (they have no target to set: the report shows the LC
#                share they give, and scores only share's error against its targets)
#
# Per row, OUT/ROW/ holds WORKLOAD.json (or WORKLOAD.err) and row.json. A workload during which the row's
# scheduler changed (an ejection: the kernel's watchdog, or the scheduler's own exit), or under an akts
# daemon whose effective policy was not the row's, keeps no figures and is listed in row.json's "invalid";
# a peer ejected during one is started again for the next. A row whose scheduler never attached is marked
# unusable. OUT/meta.json says how it ran. Progress goes to stderr.
#
# Environment: WORKLOADS, LOADS (default 0.25,0.5,0.75,0.9), BIMODAL_SECONDS (per load, default 4),
# SHORT/LONG/LONG_FRACTION (default 1ms, 100ms, 0.01), HB_SECONDS (3), CYC_SECONDS (4), SB_SECONDS (4),
# COLOC_SECONDS (3), SHARE_TARGETS (0 25 50 75), QUANTUM_TIMER (250us or off).
set -uo pipefail
if (($# < 2)); then
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
OUT=$1
shift
ROWS=("$@")
WORKLOADS=${WORKLOADS:-hackbench cyclictest sysbench bimodal colocation}
LOADS=${LOADS:-0.25,0.5,0.75,0.9}
BIMODAL_SECONDS=${BIMODAL_SECONDS:-4}
SHORT=${SHORT:-1ms}
LONG=${LONG:-100ms}
LONG_FRACTION=${LONG_FRACTION:-0.01}
HB_SECONDS=${HB_SECONDS:-3}
CYC_SECONDS=${CYC_SECONDS:-4}
SB_SECONDS=${SB_SECONDS:-4}
COLOC_SECONDS=${COLOC_SECONDS:-3}
SHARE_TARGETS=${SHARE_TARGETS:-0 25 50 75}
QUANTUM_TIMER=${QUANTUM_TIMER:-250us}
SOCK=/run/akts/matrix.sock
PEERS="scx_simple scx_central scx_flatcg"
AKTS_POLICIES="latency preempt throughput fifo rr wrr ljf wfair share srpt central"
mkdir -p "$OUT"

log() { echo "[matrix] $*" >&2; }
die() {
	log "error: $*"
	exit 1
}
is_in() { [[ " $2 " == *" $1 "* ]]; }

for r in "${ROWS[@]}"; do
	[[ $r == default ]] || is_in "$r" "$PEERS" || is_in "$r" "$AKTS_POLICIES" ||
		die "no row named '$r' (rows: default $PEERS $AKTS_POLICIES)"
done
for w in $WORKLOADS; do
	is_in "$w" "hackbench cyclictest sysbench bimodal colocation" ||
		die "no workload named '$w' (hackbench cyclictest sysbench bimodal colocation)"
done

num() { [[ $2 =~ ^[0-9]+([.][0-9]+)?$ ]] || die "$1 must be a number of seconds, not '$2'"; }
num HB_SECONDS "$HB_SECONDS"
num CYC_SECONDS "$CYC_SECONDS"
num SB_SECONDS "$SB_SECONDS"
num COLOC_SECONDS "$COLOC_SECONDS"
num BIMODAL_SECONDS "$BIMODAL_SECONDS"
[[ $HB_SECONDS =~ ^[1-9][0-9]*$ && $CYC_SECONDS =~ ^[1-9][0-9]*$ && $SB_SECONDS =~ ^[1-9][0-9]*$ ]] ||
	die "HB_SECONDS, CYC_SECONDS and SB_SECONDS are whole seconds"
[[ $LOADS =~ ^[0-9.]+(,[0-9.]+)*$ ]] || die "LOADS is a list of fractions like 0.25,0.5 (not '$LOADS')"
[[ $SHARE_TARGETS =~ ^[0-9]+( [0-9]+)*$ ]] || die "SHARE_TARGETS is a list of percentages like '0 25 50 75' (not '$SHARE_TARGETS')"
python3 - "$OUT/meta.json" "$WORKLOADS" "$LOADS" "$BIMODAL_SECONDS" "$SHORT" "$LONG" "$LONG_FRACTION" \
	"$HB_SECONDS" "$CYC_SECONDS" "$SB_SECONDS" "$COLOC_SECONDS" "$SHARE_TARGETS" "$QUANTUM_TIMER" "${ROWS[@]}" <<'PY'
import json, os, sys
(path, workloads, loads, bsecs, short, long_, lf, hb, cyc, sb, coloc, targets, qt, *rows) = sys.argv[1:]
json.dump({"rows": rows, "workloads": workloads.split(), "loads": [float(x) for x in loads.split(",")],
           "bimodal_seconds": float(bsecs), "short": short, "long": long_, "long_fraction": float(lf),
           "hackbench_seconds": int(hb), "cyclictest_seconds": int(cyc), "sysbench_seconds": int(sb),
           "colocation_seconds": float(coloc), "share_targets": [int(t) for t in targets.split()],
           "quantum_timer": qt, "kernel": os.uname().release, "cpus": os.cpu_count(), "emulated": True,
           "slo_slowdown": 50},
          open(path, "w"), indent=1)
PY
[[ -f $OUT/meta.json ]] || die "could not write $OUT/meta.json"

sched_state() { echo "$(cat /sys/kernel/sched_ext/state 2>/dev/null):$(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"; }
enable_seq() { cat /sys/kernel/sched_ext/enable_seq 2>/dev/null || echo 0; }
wait_detached() {
	for _ in $(seq 1 100); do [[ $(cat /sys/kernel/sched_ext/state) == disabled ]] && return 0; sleep 0.1; done
	log "a BPF scheduler is still attached: $(sched_state)"
	return 1
}
stop_proc() { # PID SIGNAL: the signal, up to 10 s, then SIGKILL
	kill "-$2" "$1" 2>/dev/null
	for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# user + system ticks of the pids together (fields 14 and 15 of /proc/PID/stat), with builtins only: the
# apparatus is scheduled by the policy under test too, and a fork per sample would wait on it.
ticks() {
	local pid line rest total=0 f
	for pid in "$@"; do
		read -r line <"/proc/$pid/stat" || continue
		rest=${line##*) }
		read -ra f <<<"$rest"
		total=$((total + f[11] + f[12]))
	done
	echo "$total"
}

# The policy the daemon on SOCKET applies now (its effective one), or the row's own name without a daemon.
policy_now() { # ROW SOCKET
	if [[ -z $2 ]]; then
		echo "$1"
		return
	fi
	akts status --socket "$2" --json 2>/dev/null | python3 -c '
import json, sys
print((json.load(sys.stdin).get("effective") or {}).get("policy"))' 2>/dev/null
}

# The workloads of one row; SOCKET is the akts daemon's ("" for the others), EXPECTED the scheduler the row
# runs under ("enabled:akts", "disabled:", ...). A workload keeps no figures (its WORKLOAD.err says why, and
# the row's INVALID lists it) when, at its start or end, the scheduler or the daemon's effective policy was
# not the row's, or the kernel enabled a scheduler in between (enable_seq: an ejection and a restart). A
# switch away and back within one workload that no ejection marks is not seen; nothing in this run switches.
# ENSURE (a function, or "true") runs before each workload: a peer ejected during one is started again for
# the next; if it cannot be, that workload is skipped and listed.
run_workloads() {
	local row=$1 socket=$2 expected=$3 dir=$OUT/$1 w s0 q0 p0 s1 q1 p1
	local sockarg=() runlc=()
	INVALID=()
	[[ -n $socket ]] && sockarg=(--socket "$socket") && runlc=(akts run --class lc --socket "$socket" --)
	for w in $WORKLOADS; do
		if ! "$ENSURE"; then
			echo "$row was not attached at the start of $w (see its log): skipped" >"$dir/$w.err"
			INVALID+=("$w")
			log "$row: $w skipped: the scheduler is not attached"
			continue
		fi
		s0=$(sched_state) q0=$(enable_seq) p0=$(policy_now "$row" "$socket")
		log "$row: $w"
		case $w in
		hackbench) akts workload hackbench --seconds "$HB_SECONDS" "${sockarg[@]}" --json >"$dir/hackbench.json" 2>"$dir/hackbench.err" ;;
		cyclictest) akts workload wakeup_latency --seconds "$CYC_SECONDS" "${sockarg[@]}" --json >"$dir/cyclictest.json" 2>"$dir/cyclictest.err" ;;
		sysbench) akts workload cpu_throughput --seconds "$SB_SECONDS" "${sockarg[@]}" --json >"$dir/sysbench.json" 2>"$dir/sysbench.err" ;;
		bimodal)
			local hint=()
			[[ $row == srpt ]] && hint=(--hint-socket "$socket")
			# Bounded: a stuck run costs its row's figure, not the whole matrix. In the background, so that a
			# signal reaches the trap at once; timeout leads a process group of its own, which the trap stops.
			timeout -k 10 900 "${runlc[@]}" akts bench bimodal --loads "$LOADS" --seconds "$BIMODAL_SECONDS" --short "$SHORT" --long "$LONG" \
				--long-fraction "$LONG_FRACTION" "${hint[@]}" --json >"$dir/bimodal.json" 2>"$dir/bimodal.err" &
			WL_PID=$!
			wait $WL_PID
			local wrc=$?
			WL_PID=""
			((wrc == 0))
			;;
		colocation) colocation "$row" "$socket" >"$dir/colocation.json" 2>"$dir/colocation.err" ;;
		esac || {
			echo "exit $?" >>"$dir/$w.err"
			log "$row: $w failed: $(tail -n 2 "$dir/$w.err" | tr '\n' ' ')"
			rm -f "$dir/$w.json"
		}
		s1=$(sched_state) q1=$(enable_seq) p1=$(policy_now "$row" "$socket")
		if [[ $s0 != "$expected" || $s1 != "$expected" || $q0 != "$q1" || $p0 != "$row" || $p1 != "$row" ]]; then
			echo "the scheduler was $s0 at the start of $w and $s1 at its end (enable_seq $q0 -> $q1; policy $p0 -> $p1), not $expected under $row throughout" >>"$dir/$w.err"
			rm -f "$dir/$w.json"
			INVALID+=("$w")
			log "$row: $w does not count: $(tail -n 1 "$dir/$w.err")"
		fi
		[[ -s $dir/$w.err ]] || rm -f "$dir/$w.err"
	done
}

# The node's context switches and rescheduling IPIs since boot, all CPUs, and the time: "CTXT RES EPOCHREALTIME",
# read with builtins (a fork per sample would itself be scheduled, and under preempt, as apparatus LC, kick).
node_counters() {
	local k v ctxt=0 res=0 f
	while read -r k v _; do [[ $k == ctxt ]] && ctxt=$v; done </proc/stat
	while read -ra f; do
		[[ ${f[0]} == RES: ]] || continue
		for v in "${f[@]:1}"; do [[ $v =~ ^[0-9]+$ ]] || break; res=$((res + v)); done
	done </proc/interrupts
	echo "$ctxt $res $EPOCHREALTIME"
}

# {"targets": [{"target": T|null, "lc_ticks", "be_ticks", "lc_share", "context_switches_per_s",
# "resched_ipis_per_s"}, ...]}: as many LC busy loops as CPUs beside as many BE ones, unpinned; the LC loops'
# part of the loops' CPU time, and the node's context switches and rescheduling IPIs per second meanwhile.
colocation() {
	local row=$1 socket=$2 t a0 b0 a1 b1 c0 c1 r0 r1 t0 t1 out=() lc=() be=() i p n
	local in_lc=() in_be=()
	n=$(nproc)
	# Under akts each loop is born in its class (akts run classifies itself, then execs the loop: the pid is the
	# loop's). Forked from this script, which is apparatus LC, a loop classified after it began would spin as LC
	# until then, and a classify asked while LC loops fill the CPUs under a policy that runs LC strictly first
	# could time out (seen twice, latency with the quantum timer at 250 us). BE loops first.
	[[ -n $socket ]] && in_lc=(akts run --class lc --socket "$socket" --) && in_be=(akts run --class be --socket "$socket" --)
	for ((i = 0; i < n; i++)); do
		"${in_be[@]}" bash -c 'while :; do :; done' &
		be+=($!)
	done
	for ((i = 0; i < n; i++)); do
		"${in_lc[@]}" bash -c 'while :; do :; done' &
		lc+=($!)
	done
	COLOC_PIDS=("${lc[@]}" "${be[@]}")
	local targets=(null) failed=""
	[[ $row == share ]] && targets=($SHARE_TARGETS)
	sleep 0.5
	for p in "${be[@]}" "${lc[@]}"; do
		kill -0 "$p" 2>/dev/null || failed="loop $p did not start in its class (akts run failed)"
	done
	for t in "${targets[@]}"; do
		[[ -n $failed ]] && break
		if [[ $t != null ]] && ! akts set share.lc_share "$t" --socket "$socket" >/dev/null; then
			failed="cannot set share.lc_share $t"
			break
		fi
		sleep 0.5
		a0=$(ticks "${lc[@]}") b0=$(ticks "${be[@]}")
		node_counters >"$OUT/.node_counters.0"
		sleep "$COLOC_SECONDS"
		a1=$(ticks "${lc[@]}") b1=$(ticks "${be[@]}")
		node_counters >"$OUT/.node_counters.1"
		read -r c0 r0 t0 <"$OUT/.node_counters.0"
		read -r c1 r1 t1 <"$OUT/.node_counters.1"
		out+=("$t $((a1 - a0)) $((b1 - b0)) $c0 $r0 $c1 $r1 $t0 $t1")
	done
	kill "${COLOC_PIDS[@]}" 2>/dev/null
	wait "${COLOC_PIDS[@]}" 2>/dev/null
	COLOC_PIDS=()
	[[ $row == share ]] && akts set share.lc_share 50 --socket "$socket" >/dev/null
	if [[ -n $failed ]]; then
		echo "$failed" >&2
		return 1
	fi
	printf '%s\n' "${out[@]}" | python3 -c '
import json, sys
rows = []
for line in sys.stdin:
    t, a, b, x0, r0, x1, r1, t0, t1 = line.split()
    a, b, secs = int(a), int(b), float(t1) - float(t0)
    rows.append({"target": None if t == "null" else int(t), "lc_ticks": a, "be_ticks": b,
                 "lc_share": a / (a + b) if a + b else None,
                 "context_switches_per_s": (int(x1) - int(x0)) / secs if secs > 0 else None,
                 "resched_ipis_per_s": (int(r1) - int(r0)) / secs if secs > 0 else None})
print(json.dumps({"targets": rows}))'
}

# row.json: the scheduler at the row's start and end, whether the row ran, and the workloads that do not count.
row_meta() { # ROW KIND START_STATE EXPECTED ERROR INVALID...
	python3 - "$OUT/$1/row.json" "$1" "$2" "$3" "$(sched_state)" "$4" "${5:-}" "${@:6}" <<'PY'
import json, sys
path, row, kind, s0, s1, expected, error, *invalid = sys.argv[1:]
usable = not error and s0 == expected
if not error and not usable:
    error = "the scheduler was %s at the row's start, not %s" % (s0, expected)
json.dump({"row": row, "kind": kind, "start": s0, "end": s1, "usable": usable, "error": error or None,
           "invalid": invalid}, open(path, "w"), indent=1)
PY
}

run_default() {
	rm -rf "$OUT/default" && mkdir -p "$OUT/default"
	local s0
	wait_detached
	s0=$(sched_state)
	ENSURE=wait_detached
	INVALID=()
	[[ $s0 == disabled: ]] && run_workloads default "" "disabled:"
	row_meta default default "$s0" "disabled:" "" "${INVALID[@]}"
}

PEER_PID=""
PEER=""
# Starts $PEER unless it is attached; true if it is.
peer_ensure() {
	[[ $(sched_state) == "enabled:${PEER#scx_}" ]] && return 0
	[[ -n $PEER_PID ]] && stop_proc "$PEER_PID" INT
	wait_detached || return 1
	"$PEER" >>"$OUT/$PEER/$PEER.log" 2>&1 &
	PEER_PID=$!
	for _ in $(seq 1 200); do [[ $(sched_state) == "enabled:${PEER#scx_}" ]] && return 0; sleep 0.1; done
	return 1
}

run_peer() {
	local row=$1 s0 err=""
	rm -rf "${OUT:?}/$row" && mkdir -p "$OUT/$row"
	PEER=$row PEER_PID=""
	INVALID=()
	if ! command -v "$row" >/dev/null; then
		err="$row is not in the guest (the toolchain did not build it)"
	elif ! peer_ensure; then
		err="$row did not attach: $(tail -n 3 "$OUT/$row/$row.log" | tr '\n' ' ')"
	fi
	s0=$(sched_state)
	ENSURE=peer_ensure
	[[ -z $err ]] && run_workloads "$row" "" "enabled:${row#scx_}"
	row_meta "$row" peer "$s0" "enabled:${row#scx_}" "$err" "${INVALID[@]}"
	[[ -n $PEER_PID ]] && stop_proc "$PEER_PID" INT
	PEER_PID=""
}

# Up to eight akts rows under one daemon, one after another.
run_akts_group() {
	local rows=("$@") dpid cfg=$OUT/akts-${1}.json r s0 err
	python3 - "$SOCK" "$QUANTUM_TIMER" "${rows[@]}" >"$cfg" <<'PY'
import json, sys
sock, qt, *rows = sys.argv[1:]
print(json.dumps({"socket": sock, "switch_all": True, "policies": rows, "initial": rows[0],
                  "state_file": "", "audit_log": "", "repository": "", "breaker": {"armed": False},
                  "guard": {"quantum_timer": qt},
                  "classes": [{"class": "lc", "comm": "cyclictest"}, {"class": "be", "comm": "stress-ng"},
                              {"class": "be", "comm": "hackbench"}, {"class": "be", "comm": "sysbench"}]}))
PY
	wait_detached || log "starting the daemon anyway: it will refuse to attach over another scheduler"
	akts daemon -c "$cfg" >"$OUT/akts-${1}.log" 2>&1 &
	dpid=$!
	DAEMON_PID=$dpid
	for _ in $(seq 1 900); do
		[[ -S $SOCK ]] && akts status --socket $SOCK >/dev/null 2>&1 && break
		kill -0 $dpid 2>/dev/null || break
		sleep 0.1
	done
	# The apparatus (this script and its children) is LC here: a policy that starves BE while LC work saturates
	# the CPUs (latency) would otherwise stall the run itself for as long as the guard allows. (The daemon
	# refuses to classify itself: "the daemon does not schedule itself".)
	akts classify --socket $SOCK $$ lc >/dev/null ||
		log "could not classify the apparatus LC: the run goes on, slower under policies that starve BE"
	ENSURE=true
	for r in "${rows[@]}"; do
		rm -rf "${OUT:?}/$r" && mkdir -p "$OUT/$r"
		err=""
		INVALID=()
		akts switch "$r" --socket $SOCK >/dev/null 2>"$OUT/$r/switch.err" ||
			err="the daemon did not take the switch to $r: $(tail -n 2 "$OUT/$r/switch.err" "$OUT/akts-${1}.log" | tr '\n' ' ')"
		sleep 0.3
		s0=$(sched_state)
		# The daemon's counters before and after the row (they are totals since it started).
		akts stats --socket $SOCK --json >"$OUT/$r/stats0.json" 2>/dev/null
		[[ -z $err ]] && run_workloads "$r" "$SOCK" "enabled:akts"
		row_meta "$r" akts "$s0" "enabled:akts" "$err" "${INVALID[@]}"
		akts stats --socket $SOCK --json >"$OUT/$r/stats.json" 2>/dev/null
	done
	stop_proc $dpid INT
	DAEMON_PID=""
}

# Whatever ends the run (an error, a signal), what it started is stopped: the colocation loops and the
# bimodal run's process group (a signal), the peer and the daemon (a signal, up to 10 s, then SIGKILL). A
# signal that comes while `akts workload` runs in the foreground is taken when that scenario ends (each ends
# on its own within its seconds + 30 s).
DAEMON_PID="" PEER_PID="" WL_PID="" COLOC_PIDS=()
cleanup() {
	((${#COLOC_PIDS[@]})) && kill "${COLOC_PIDS[@]}" 2>/dev/null
	[[ -n $WL_PID ]] && kill -TERM -- "-$WL_PID" 2>/dev/null
	[[ -n $PEER_PID ]] && stop_proc "$PEER_PID" INT
	[[ -n $DAEMON_PID ]] && stop_proc "$DAEMON_PID" INT
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

group=()
for r in "${ROWS[@]}"; do
	if [[ $r == default ]]; then
		run_default
	elif is_in "$r" "$PEERS"; then
		run_peer "$r"
	else
		group+=("$r")
		if ((${#group[@]} == 8)); then
			run_akts_group "${group[@]}"
			group=()
		fi
	fi
done
((${#group[@]})) && run_akts_group "${group[@]}"
log "done: $OUT"
