#!/bin/bash
# The learner's evaluation, part two (issue 37): the serving experiment (experiment.sh) on the node where the
# default scheduler hurts (gpu-hostwork), with open-loop arrivals on one seeded schedule every arm replays,
# scored by goodput under the calibrated TTFT and TPOT limits.
# Settings are frozen here, before any run, and are the same for every load:
#   - the learner with its defaults (src/reasoning/learner.h), and an objective of both limits the calibration
#     measured (OBJECTIVE_TPOT=slo: TTFT and TPOT, each alone's p99 under the load times SLO_SCALE);
#   - the online arms load latency, throughput and preempt (ONLINE_POLICIES); the static arms one each;
#   - the oracle follows the load's phases (latency in a phase busier than the lightest, throughput else); the
#     yardstick of the long trace's targets is the best static policy of each phase in hindsight (evaluate.py),
#     from the static arms' runs of that load;
#   - one calibration run a load (CALIBRATION_RUNS=1), the experiment's other defaults.
#
#   learner_eval.sh OUT RUNS [LOAD...]
#
# Loads (PHASES, rates as multiples of the capacity the calibration measures):
#   phased  the experiment's own: steady 10 s at 0.15x, a burst 6 s at 0.8x, steady 10 s
#   long    10 cycles of (steady 8 s at 0.15x, burst 5 s at 0.8x), then steady 8 s: the learner's regret
#           against the best static policy of each phase in hindsight (evaluate.py), cycle by cycle
# Arms: phased: default, latency, preempt, throughput, oracle, learner; long: the same but throughput, which
# answers nothing on this node (phased: 0 good requests, no phase's best) and would cost 3 minutes a run.
# OUT/LOAD/ is an experiment.sh directory (serving/report.py reads it). Progress on stderr.
set -uo pipefail
if (($# < 2)); then
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
OUT=$1
RUNS=$2
shift 2
LOADS=("$@")
((${#LOADS[@]})) || LOADS=(phased long)
HERE=$(cd "$(dirname "$0")" && pwd)

phases_of() {
	case $1 in
	phased) echo "steady:10s:0.15x,burst:6s:0.8x,steady:10s:0.15x" ;;
	long)
		local p="" c
		for c in $(seq 1 10); do p+="steady:8s:0.15x,burst:5s:0.8x,"; done
		echo "${p}steady:8s:0.15x"
		;;
	*) return 1 ;;
	esac
}

for load in "${LOADS[@]}"; do
	phases_of "$load" >/dev/null || { echo "[learner_eval] error: no load named '$load' (phased, long)" >&2; exit 2; }
done
mkdir -p "$OUT"
rc=0
for load in "${LOADS[@]}"; do
	arms=(default latency preempt throughput oracle learner)
	[[ $load == long ]] && arms=(default latency preempt oracle learner)
	echo "[learner_eval] load $load: $(phases_of "$load") (${arms[*]})" >&2
	NODE=gpu-hostwork OBJECTIVE_TPOT=slo ONLINE_POLICIES="latency throughput preempt" CALIBRATION_RUNS=1 \
		PHASES=$(phases_of "$load") bash "$HERE/experiment.sh" "$OUT/$load" "$RUNS" "${arms[@]}" || rc=1
done
exit $rc
