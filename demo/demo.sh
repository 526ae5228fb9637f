#!/bin/bash
# The main demo, in the guest: an LLM server under CPU contention, with akts
# switching its scheduling policy as the load changes (the serving experiment
# of docs/serving.md, one short run of each arm). First the machine is
# calibrated alone: its capacity sets the load's arrival rates, and alone's
# TTFT and TPOT set the objective's limits (nothing tuned on another machine).
# A load generator then drives one steady -> burst -> steady cycle of open-loop
# arrivals (one seeded schedule, the same in every arm) at llama-server, which
# shares its CPU with stress-ng hogs (the batch work). First the oracle
# (switching as the load says each phase begins) and then akts's regime
# detector (which sees only telemetry): each switch is printed as it happens
# (time, reason, policy), and each request's TTFT as it completes. Then the
# same cycle under the two fixed policies and the kernel's default scheduler,
# quietly, and the verdict an operator asks for: is the node better with akts
# than with the default, by goodput (requests a second within the limits)?
# One run can be luck: a gap within the bench's spread (serving/spread.json)
# is "inconclusive".
#
#   demo.sh [PHASE_SECONDS] [OUT_DIR]
#
# NODE=gpu-hostwork (the default): the GPU-shaped node with part of the
# model's per-token work on the contended CPU, as a serving engine's CPU side;
# NODE=gpu: every layer on ggml-rpc-server on the other CPU (the accelerator's
# stand-in), where the default scheduler hardly hurts; NODE=cpu: llama-server
# computes on the contended CPU (serving/experiment.sh says more).
# PHASE_SECONDS, when given, sets every phase's length (default: the node's
# phases).
set -uo pipefail
PHASE=${1:-}
OUT=${2:-/tmp/akts-demo}
NODE=${NODE:-gpu-hostwork}
mkdir -p "$OUT"
[[ -z $PHASE || $PHASE =~ ^[1-9][0-9]*$ ]] ||
	{ echo "PHASE_SECONDS must be a whole number of seconds, not '$PHASE'" >&2; exit 2; }
case $NODE in
gpu | gpu-hostwork)
	if [[ $NODE == gpu ]]; then
		node="llama-server keeps the serving path (HTTP, tokenizing, sampling) on CPU 0 beside a stress-ng CPU
   hog; every layer of the model runs on ggml-rpc-server on CPU 1, the stand-in for a GPU, with the load
   generator and the akts daemon."
	else
		node="llama-server keeps the serving path and one of the model's layers (a serving engine's per-token CPU
   work) on CPU 0 beside two stress-ng CPU hogs; the other layers run on ggml-rpc-server on CPU 1, the
   stand-in for a GPU, with the load generator and the akts daemon."
	fi
	node+=" akts runs in partial mode: only llama-server
   (latency-critical) and stress-ng (batch) are in its scheduler."
	[[ -n $PHASE ]] && export PHASES="steady:${PHASE}s:0.15x,burst:${PHASE}s:0.8x,steady:${PHASE}s:0.15x"
	load="open-loop arrivals: steady (0.15 x the capacity measured alone) -> burst (0.8 x) -> steady"
	;;
cpu)
	node="llama-server (computing the model itself) and two stress-ng CPU hogs share CPU 0; the load generator
   and the akts daemon run on CPU 1. akts manages every task (llama-server latency-critical, stress-ng batch)."
	[[ -n $PHASE ]] && export PHASES="steady:${PHASE}s:1:500ms,burst:${PHASE}s:4,steady:${PHASE}s:1:500ms"
	load="steady (1 user, 0.5 s think time) -> burst (4 users) -> steady"
	;;
*)
	echo "NODE must be gpu-hostwork, gpu or cpu, not '$NODE'" >&2
	exit 2
	;;
esac
cat >&2 <<TXT
== akts demo: kernel $(uname -r), $(nproc) CPUs (QEMU TCG: times are emulated, compare arms with each other)
   The ${NODE^^} node: $node
   Load: $load${PHASE:+, ${PHASE} s each}.
   Two policies: latency (serve the LC task first) and throughput (long slices, batch keeps its share),
   against the kernel's default scheduler.

== 0. calibration, alone (no hogs): the capacity sets the arrival rates, alone's TTFT and TPOT the limits
== 1. the oracle (switches as the load says each phase begins) and 2. akts's regime detector (sees only
   telemetry): switches and each request's TTFT as they happen
TXT
export NODE LIVE="oracle detector" CALIBRATION_RUNS=${CALIBRATION_RUNS:-1}
# The switching arms first and printed live; then the fixed policies and the default, quietly.
bash "$(dirname "$0")/../serving/experiment.sh" "$OUT" 1 oracle detector latency throughput default 2>&1 |
	sed -u 's/^\[serving\] [0-9]*\/[0-9]* run 1 \(oracle\|detector\): /   done: /; s/^\[serving\] [0-9]*\/[0-9]* run 1 \([a-z_]*\): /== \1: /'
echo >&2
echo "== 3. the verdict on this one run (./akts bench serving runs every arm 7 times, with 95% intervals; here a gap" >&2
echo "   within the bench's spread is inconclusive)" >&2
python3 "$(dirname "$0")/../serving/report.py" "$OUT" --no-plots --brief --spread "$(dirname "$0")/../serving/spread.json"
