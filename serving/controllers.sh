#!/bin/bash
# The controllers' evaluation in the guest (issue 29): the serving experiment
# (experiment.sh, the GPU-shaped node) on loads the controllers were not tuned
# on, then a long trace of cycles for the learner's regret against the oracle.
# Settings are frozen: every arm runs with experiment.sh's defaults on the gpu node, with issue 29's objective
# (OBJECTIVE_MAX 6s, not the calibration's TTFT limit) and one calibration run a load (its goodput limits are
# reported, not used by the controllers). The loads are not issue 29's in every respect since issue 35: the
# steady and burst users are apart, a request unanswered 10 s after the load is cut, the think times draw
# per user group, and the oracle follows the phases the load says; docs/reasoning.md's figures predate that.
#
#   controllers.sh OUT RUNS [LOAD...]
#
# Loads (each a PHASES list; "busy" phases have more than one user, which is
# where the oracle runs latency):
#   calibration  the experiment's own load (the detector's settings were chosen on it)
#   short        two short bursts with a short gap between them
#   tall         a taller, longer burst (10 users for 8 s)
#   ramp         1, 2, 4, 6, 4, 2, 1 users
#   random       a seeded random sequence of phases, each 2-5 s long with 0-6 users whose think times are
#                exponential of mean 500 ms: each idle user sends its next request as a Poisson process would,
#                at a rate that changes at random times (closed-loop users: a busy user sends nothing, so the
#                arrivals are not Poisson overall)
#   steady       one user, steadily: a load a single policy (throughput) serves within the objective
#   long         10 cycles of (steady 8 s, burst 5 s), then steady: the learner's regret by cycle (oracle and
#                learner only)
# Arms on each load but long: latency, throughput (the static policies), oracle, detector, bandit, learner.
# OUT/LOAD/ is an experiment.sh directory for serving/evaluate.py. Progress on stderr.
set -uo pipefail
if (($# < 2)); then
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
OUT=$1
RUNS=$2
shift 2
LOADS=("$@")
((${#LOADS[@]})) || LOADS=(calibration short tall ramp random steady long)
HERE=$(cd "$(dirname "$0")" && pwd)

phases_of() {
	case $1 in
	calibration) echo "steady:10s:1:1s,burst:6s:6,steady:10s:1:1s" ;;
	short) echo "steady:6s:1:1s,burst:3s:6,steady:3s:1:1s,burst:3s:6,steady:8s:1:1s" ;;
	tall) echo "steady:8s:1:1s,burst:8s:10,steady:10s:1:1s" ;;
	ramp) echo "steady:6s:1:1s,up2:4s:2,up4:4s:4,burst:4s:6,down4:4s:4,down2:4s:2,steady:8s:1:1s" ;;
	random)
		python3 - <<'PY'
import random
rng = random.Random(29)
parts = ["steady:5s:1:~500ms"]
for k in range(7):
    users = rng.choice([0, 1, 2, 3, 4, 6])
    parts.append("r%d:%ds:%d:~500ms" % (k + 1, rng.randint(2, 5), users))
parts.append("steady:5s:1:~500ms")
print(",".join(parts))
PY
		;;
	steady) echo "steady:24s:1:1s" ;;
	long)
		local p="" c
		for c in $(seq 1 10); do p+="steady:8s:1:1s,burst:5s:6,"; done
		echo "${p}steady:8s:1:1s"
		;;
	*) return 1 ;;
	esac
}

for load in "${LOADS[@]}"; do
	phases_of "$load" >/dev/null || { echo "[controllers] error: no load named '$load'" >&2; exit 2; }
done
mkdir -p "$OUT"
rc=0
for load in "${LOADS[@]}"; do
	arms=(latency throughput oracle detector bandit learner)
	[[ $load == long ]] && arms=(oracle learner)
	echo "[controllers] load $load: $(phases_of "$load") (${arms[*]})" >&2
	NODE=${NODE:-gpu} OBJECTIVE_MAX=${OBJECTIVE_MAX:-6s} CALIBRATION_RUNS=${CALIBRATION_RUNS:-1} PHASES=$(phases_of "$load") \
		bash "$HERE/experiment.sh" "$OUT/$load" "$RUNS" "${arms[@]}" || rc=1
done
exit $rc
