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
}
