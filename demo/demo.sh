#!/bin/bash
# The main demo, in the guest: an LLM server under CPU contention, with akts
# switching its scheduling policy as the load changes (the serving experiment
# of docs/serving.md, one short run). llama-server shares its CPU with two
# stress-ng hogs; a load generator drives one steady -> burst -> steady cycle.
# First the daemon runs its regime detector: each switch is printed as it
# happens (time, reason, policy), and each request's TTFT as it completes.
# Then the same cycle under the fixed policies and the kernel's default
# scheduler, and a table comparing them.
#
#   demo.sh [PHASE_SECONDS] [OUT_DIR]
set -uo pipefail
PHASE=${1:-8}
OUT=${2:-/tmp/akts-demo}
mkdir -p "$OUT"
[[ $PHASE =~ ^[1-9][0-9]*$ ]] || { echo "PHASE_SECONDS must be a whole number of seconds, not '$PHASE'" >&2; exit 2; }
cat >&2 <<TXT
== akts demo: kernel $(uname -r), $(nproc) CPUs (QEMU TCG: times are emulated, compare arms with each other)
   llama-server (a small random-weight llama) and two stress-ng CPU hogs share CPU 0; the load generator and
   the akts daemon run on CPU 1. Load: steady (1 user, 0.5 s think time) ${PHASE} s -> burst (4 users) ${PHASE} s
   -> steady ${PHASE} s. akts manages every task (llama-server latency-critical, stress-ng batch) with two
   policies: latency (serve the LC task first) and throughput (long slices, batch keeps its share).

== 1. akts with its regime detector: switches and each request's TTFT as they happen
TXT
export PHASES="steady:${PHASE}s:1:500ms,burst:${PHASE}s:4,steady:${PHASE}s:1:500ms" LIVE=detector
# The detector's arm first and printed live; then the fixed policies and the default scheduler, quietly.
bash "$(dirname "$0")/../serving/experiment.sh" "$OUT" 1 detector latency throughput default 2>&1 |
	sed -u 's/^\[serving\] [0-9]*\/[0-9]* run 1 \(detector\): /   done: /; s/^\[serving\] [0-9]*\/[0-9]* run 1 \([a-z_]*\): /== \1: /'
echo >&2
echo "== 2. the comparison (one run each: ./akts bench serving repeats every arm and adds confidence intervals)" >&2
python3 "$(dirname "$0")/../serving/report.py" "$OUT" --no-plots --brief
