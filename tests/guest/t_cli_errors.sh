# Bad arguments: exit 2 (bad input, nothing changed), the message that names the problem (the option or argument,
# the value given and what is wrong with it: CLI11's own text, or akts's), and no scheduler attached.
expect_refusal() { # MESSAGE COMMAND...: MESSAGE, a fixed string, must be in the command's stderr
	local want="$1"
	shift
	local err rc
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	if ((rc == 2)) && grep -qF -- "$want" <<<"$err" && [[ "$(cat /sys/kernel/sched_ext/state)" == disabled ]]; then
		ok "refused: $* (exit $rc: $want)"
	else
		not_ok "refused: $* (exit $rc, want 2 and \"$want\"; stderr: ${err:0:200})"
	fi
}

t_cli_errors() {
	expect_refusal "--workers: Value 0 not in range 1 to 256" akts selftest --workers 0
	expect_refusal "--workers: Value -1 not in range 1 to 256" akts selftest --workers -1
	expect_refusal "--workers: Value 0.3 not in range 1 to 256" akts selftest --workers 0.3
	expect_refusal '--storm: "0.3" needs a unit (ns, us, ms, s or m)' akts selftest --storm 0.3
	expect_refusal '--storm: "" needs a unit (ns, us, ms, s or m)' akts selftest --storm ""
	expect_refusal "--only: no_such_check not in {" akts selftest --only no_such_check
	expect_refusal "unknown command 'nosuch'" akts nosuch
	# The reasoning plane's commands refuse bad arguments before they reach a daemon.
	expect_refusal "--for is required" akts hold latency
	expect_refusal "name: Detector not in {none,detector," akts controller Detector
	expect_refusal "--dry-run excludes --apply" akts controller detector --dry-run --apply
	expect_refusal "--limit: Value 0 not in range 1 to 500" akts log -n 0
	expect_refusal "latency_ms: Value -1 not in range 0" akts push -- -1
	expect_refusal "push: every latency must be a finite number of milliseconds" akts push nan
	expect_refusal "push: give latencies (ms), --tpot MS... with --decode MS..., --waiting MS, --phase NAME, or several" akts push
	expect_refusal "push: 1 --tpot but 0 --decode: give one decode time" akts push --tpot 5
	# The load generator refuses a load it cannot run before it sends anything.
	expect_refusal "--phases rate '-1/s' is not RATE/s" akts loadgen --phases burst:6s:-1/s
	expect_refusal "--phases rate '1e3/s' is not RATE/s" akts loadgen --phases burst:6s:1e3/s
	expect_refusal "an open-loop phase (a rate) has no think time" akts loadgen --phases burst:6s:2/s:1s
	expect_refusal "--burstiness: Value 0 not in range" akts loadgen --burstiness 0
	expect_refusal '--slo-ttft: "2" needs a unit' akts loadgen --slo-ttft 2
	expect_refusal "the TTFT limit must be a positive number of ms" akts loadgen --slo-ttft 0ms
	expect_refusal "--waiting: Value -3 not in range 0" akts push --waiting -3
	expect_refusal "push: --waiting must be a finite number of milliseconds" akts push --waiting nan
	expect_refusal "--controller: 'nope' is not a controller (none, detector," akts daemon --check-config --controller nope
	# The benchmark workloads refuse bad settings before they start anything.
	expect_refusal "--loads: '0.3,x' is not a list of fractions" akts bench bimodal --loads 0.3,x
	expect_refusal "a load is a fraction of the CPUs' capacity in (0, 2], not 0" akts bench bimodal --loads "0,3"
	expect_refusal "requests in all: at most 5 million" akts bench bimodal --loads 2 --short 10us --long 10us --seconds 600
	expect_refusal "a long request's service time: at least the short one's" akts bench bimodal --short 1ms --long 0.5ms
	expect_refusal "scenario: rm-rf not in {wakeup_latency,hackbench,cpu_throughput}" akts workload rm-rf
	expect_refusal "--seconds: Value 0 not in range 1 to 60" akts workload hackbench --seconds 0
}
