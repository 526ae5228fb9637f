#!/bin/bash
# preempt against the kernel's default and latency (issue 36, docs/policies.md): RUNS runs of the matrix's
# cyclictest and colocation workloads (bench/matrix.sh) under default (EEVDF), latency and preempt with the
# frame's quantum timer off (the serving experiment's setting), and latency with it at 250 us (the matrix's),
# interleaved: run i holds every row once, in an order rotated from run to run. Raw results for
# bench/preempt_report.py.
#
#   preempt.sh OUT RUNS
#
# OUT/runI/ROW/ and OUT/runI-q250/latency/ as matrix.sh leaves them (OUT/runI/meta.json: its last row's
# call). Environment: CYC_SECONDS (default 8), COLOC_SECONDS (default 4).
set -uo pipefail
if (($# != 2)) || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
OUT=$1 RUNS=$2
HERE=$(dirname "$(readlink -f "$0")")
export WORKLOADS="cyclictest colocation" CYC_SECONDS=${CYC_SECONDS:-8} COLOC_SECONDS=${COLOC_SECONDS:-4}
mkdir -p "$OUT"
ROWS=(default latency preempt)
for ((i = 1; i <= RUNS; i++)); do
	echo "[preempt] run $i of $RUNS" >&2
	# Each run starts one row further along, so a machine that slows (or speeds up) within a run weighs on
	# every row alike over the runs, not on the last one.
	# (One matrix.sh call per row: it runs the default before any akts row it is given.)
	k=$(((i - 1) % ${#ROWS[@]}))
	for row in "${ROWS[@]:k}" "${ROWS[@]:0:k}"; do
		QUANTUM_TIMER=off bash "$HERE/matrix.sh" "$OUT/run$i" "$row"
	done
	QUANTUM_TIMER=250us bash "$HERE/matrix.sh" "$OUT/run$i-q250" latency
done
echo "[preempt] done: $OUT" >&2
