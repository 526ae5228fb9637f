#!/bin/bash
# Guest test runner (run.sh [TEST...]): runs the registered tests serially on the real sched_ext
# kernel and prints TAP. Each test is a function `t_<name>` that prints its own
# TAP lines through `ok` / `not_ok` (one test may judge several checks). The
# TAP also goes to /akts/out/tap for the host. Exit status: 0 only if nothing
# failed.
set -uo pipefail # so `cmd | grep -q X` can fail when grep quits before cmd has written all (SIGPIPE): use `grep X >/dev/null`

HERE="$(cd "$(dirname "$0")" && pwd)"
OUT=/akts/out
mkdir -p "$OUT"
: >"$OUT/tap"
# The TAP counters, named so that no test's local variable can shadow them (bash scopes dynamically).
TAP_N=0
TAP_FAILURES=0

emit() { echo "$*" | tee -a "$OUT/tap"; }
ok() {
	TAP_N=$((TAP_N + 1))
	emit "ok $TAP_N - $*"
}
not_ok() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILURES=$((TAP_FAILURES + 1))
	emit "not ok $TAP_N - $*"
}
diag() { emit "# $*"; }
wait_port() { # PORT: until something accepts on 127.0.0.1:PORT, 10 s at most
	local i
	for i in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
# Reads "ok<TAB>text" / "not<TAB>text" lines (from a checker script) into TAP;
# "# text" lines pass through as diagnostics. Feed it with `verdicts < <(...)`:
# a pipe would run it in a subshell and lose the count.
verdicts() {
	local verdict what line
	while IFS= read -r line; do
		if [[ $line == "# "* ]]; then
			diag "${line#\# }"
			continue
		fi
		IFS=$'\t' read -r verdict what <<<"$line"
		if [[ $verdict == ok ]]; then ok "$what"; else not_ok "$what"; fi
	done
}

for t in "$HERE"/t_*.sh; do
	# shellcheck source=/dev/null
	source "$t"
done

TESTS=(
	selftest            # the execution plane's checks (gates, invalid index, storm, override)
	cli_errors          # bad arguments get a clear error and a non-zero exit
	busy_refusal        # akts refuses to attach while another scheduler is active
	daemon              # the daemon, its socket and the CLI, end to end
	control             # requests that once aborted it, half-close, a switch under load
	classify            # classes follow forks, execs and exits by the kernel's events; the scaling benchmark's smoke run
	metrics             # /metrics and akts stats --prometheus, judged by promtool and the Python client's parser
	prometheus          # a real Prometheus scrapes the daemon: the dashboard's queries, a switch and a trip in its panels, the alerts
	top                 # akts top in tmux: a switch made elsewhere shown, its keys switch and pause, small terminals, a daemon that comes back
	reload              # kill -HUP applies a new objective and classes; a broken file changes nothing; a storm of 100; a closing terminal stops it
	ejection            # the daemon reports a kernel ejection and cleans up
	breaker             # the circuit breaker trips under throughput, the daemon reports it, it lets go
	restart             # SIGKILL during a switch storm: nothing lost, the next daemon takes up classes and selection
	kernel_restart      # CPU hotplug makes the kernel ask for a restart; sysrq-S with restart.on_eject; the limit
	bounded_wait        # without the guard, the bounded-wait check fails (negative control)
	preempt             # with preempt's kick off, the preempt_wakeup check fails (negative control)
	switch_all          # --switch-all manages every task
	mcp                 # the official MCP SDK drives akts mcp (stdio, HTTP) through every tool; conformance runner
	admission           # a candidate refused at each gate; a hot-add under load; eviction
	params              # live parameters: listed, bad values refused, a slice change takes effect
	policies            # fifo, rr, ljf, wfair, wrr, share, srpt: each one's behaviour measured; switches through private queues
	reasoning           # the detector switches into latency during a real burst and back after it
	learner             # the learner resumes from its own state file after a SIGKILL mid-trace
	llm                 # the llm controller against llama-server with a random model: inert on noise
	serving             # a smoke run of the serving experiment: each kind of arm's plumbing, not its figures
	matrix              # a smoke run of the policy x workload matrix (four rows); an ejected peer's workload kept out of it
	bench               # every benchmark arm runs and reports sane numbers
)

# Arguments name the tests to run (default: all); -NAME arguments run all but those.
if (($#)) && [[ $1 == -* ]]; then
	declare -A leave_out=()
	for a in "$@"; do
		[[ $a == -* && " ${TESTS[*]} " == *" ${a#-} "* ]] || {
			echo "run.sh: '$a' is not -NAME of a test (${TESTS[*]})" >&2
			exit 2
		}
		leave_out[${a#-}]=1
	done
	kept=()
	for t in "${TESTS[@]}"; do [[ -n ${leave_out[$t]:-} ]] || kept+=("$t"); done
	TESTS=("${kept[@]}")
	diag "left out: ${!leave_out[*]}"
elif (($#)); then
	for a in "$@"; do
		[[ " ${TESTS[*]} " == *" $a "* ]] || {
			echo "run.sh: '$a' is not a test (${TESTS[*]})" >&2
			exit 2
		}
	done
	TESTS=("$@")
fi

diag "kernel $(uname -r), sched_ext state $(cat /sys/kernel/sched_ext/state), $(nproc) CPUs"
for t in "${TESTS[@]}"; do
	diag "--- $t"
	started=$SECONDS
	"t_$t"
	diag "$t took $((SECONDS - started)) s"
done
emit "1..$TAP_N"
echo "$((TAP_N - TAP_FAILURES)) passed, $TAP_FAILURES failed"
((TAP_FAILURES == 0))
