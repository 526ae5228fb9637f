# Bad arguments: a clear message and a non-zero exit, and no scheduler attached.
expect_refusal() {
	local want="$1"
	shift
	local err rc
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	if ((rc != 0)) && grep -qi -- "$want" <<<"$err" && [[ "$(cat /sys/kernel/sched_ext/state)" == disabled ]]; then
		ok "refused: $* (exit $rc)"
	else
		not_ok "refused: $* (exit $rc, stderr: ${err:0:200})"
	fi
}

t_cli_errors() {
	expect_refusal "workers" akts selftest --workers 0
	expect_refusal "workers" akts selftest --workers -1
	expect_refusal "workers" akts selftest --workers 0.3
	expect_refusal "storm" akts selftest --storm 0.3
	expect_refusal "storm" akts selftest --storm ""
	expect_refusal "only" akts selftest --only no_such_check
	expect_refusal "nosuch" akts nosuch
	# The reasoning plane's commands refuse bad arguments before they reach a daemon.
	expect_refusal "for" akts hold latency
	expect_refusal "name" akts controller Detector
	expect_refusal "dry-run" akts controller detector --dry-run --apply
	expect_refusal "limit" akts log -n 0
	expect_refusal "latency_ms" akts push -- -1
	expect_refusal "finite" akts push nan
	expect_refusal "controller" akts daemon --check-config --controller nope
	# The benchmark workloads refuse bad settings before they start anything.
	expect_refusal "loads" akts bench bimodal --loads 0.3,x
	expect_refusal "load" akts bench bimodal --loads "0,3"
	expect_refusal "5 million" akts bench bimodal --loads 2 --short 10us --long 10us --seconds 600
	expect_refusal "short" akts bench bimodal --short 1ms --long 0.5ms
	expect_refusal "scenario" akts workload rm-rf
	expect_refusal "seconds" akts workload hackbench --seconds 0
}
