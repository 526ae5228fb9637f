#!/bin/bash
# The main demo, in the guest: an LLM server under CPU contention, with akts
# switching its scheduling policy as the load changes (the serving experiment
# of docs/serving.md, one short run of each arm). A load generator drives one
# steady -> burst -> steady cycle at llama-server, which shares its CPU with
# stress-ng hogs (the batch work: one on the GPU node, two on the CPU-bound one).
# First the oracle (switching at the known phase boundaries) and then akts's
# regime detector (which sees only telemetry): each switch is printed as it
# happens (time, reason, policy), and each request's TTFT as it completes.
# Then the same cycle under the two fixed policies, quietly, and the verdict:
# did switching get latency's burst TTFT and throughput's batch work?
#
#   demo.sh [PHASE_SECONDS] [OUT_DIR]
#
# NODE=gpu (the default): the GPU-shaped node, the model's compute on
# ggml-rpc-server on the other CPU (the accelerator's stand-in); NODE=cpu:
# llama-server computes on the contended CPU (serving/experiment.sh says more).
# PHASE_SECONDS, when given, sets every phase's length (default: the node's
# calibrated phases).
set -uo pipefail
PHASE=${1:-}
OUT=${2:-/tmp/akts-demo}
NODE=${NODE:-gpu}
mkdir -p "$OUT"
[[ -z $PHASE || $PHASE =~ ^[1-9][0-9]*$ ]] ||
	{ echo "PHASE_SECONDS must be a whole number of seconds, not '$PHASE'" >&2; exit 2; }
case $NODE in
gpu)
	node="llama-server keeps the serving path (HTTP, tokenizing, sampling) on CPU 0 beside a stress-ng CPU
   hog; every layer of the model runs on ggml-rpc-server on CPU 1, the stand-in for a GPU, with the load
   generator and the akts daemon. akts runs in partial mode: only llama-server (latency-critical) and
   stress-ng (batch) are in its scheduler."
	[[ -n $PHASE ]] && export PHASES="steady:${PHASE}s:1:1s,burst:${PHASE}s:6,steady:${PHASE}s:1:1s"
	load="steady (1 user, 1 s think time) -> burst (6 users) -> steady"
	;;
cpu)
	node="llama-server (computing the model itself) and two stress-ng CPU hogs share CPU 0; the load generator
   and the akts daemon run on CPU 1. akts manages every task (llama-server latency-critical, stress-ng batch)."
	[[ -n $PHASE ]] && export PHASES="steady:${PHASE}s:1:500ms,burst:${PHASE}s:4,steady:${PHASE}s:1:500ms"
	load="steady (1 user, 0.5 s think time) -> burst (4 users) -> steady"
	;;
*)
	echo "NODE must be gpu or cpu, not '$NODE'" >&2
	exit 2
	;;
esac
cat >&2 <<TXT
== akts demo: kernel $(uname -r), $(nproc) CPUs (QEMU TCG: times are emulated, compare arms with each other)
   The ${NODE^^} node: $node
   Load: $load${PHASE:+, ${PHASE} s each}.
   Two policies: latency (serve the LC task first) and throughput (long slices, batch keeps its share).

== 1. the oracle (switches at the known phase boundaries) and 2. akts's regime detector (sees only
   telemetry): switches and each request's TTFT as they happen
TXT
export NODE LIVE="oracle detector"
# The switching arms first and printed live; then the fixed policies, quietly.
bash "$(dirname "$0")/../serving/experiment.sh" "$OUT" 1 oracle detector latency throughput 2>&1 |
	sed -u 's/^\[serving\] [0-9]*\/[0-9]* run 1 \(oracle\|detector\): /   done: /; s/^\[serving\] [0-9]*\/[0-9]* run 1 \([a-z_]*\): /== \1: /'
echo >&2
echo "== 3. the verdict on this one run (no spread, not a test: ./akts bench serving runs every arm 7 times, with" >&2
echo "   95% intervals)" >&2
python3 "$(dirname "$0")/../serving/report.py" "$OUT" --no-plots --brief
