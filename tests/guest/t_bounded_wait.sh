# The bounded_wait check can fail: without the guard, the greedy test policy
# (bpf/selftest/greedy.bpf.c) starves a task until the kernel's watchdog
# ejects the scheduler. selftest's own bounded_wait (with the guard) passes in
# t_selftest; this is the negative control that shows the scenario is real.
t_bounded_wait() {
	local json="$OUT/bounded_wait_noguard.json"
	# Provoked on purpose: declare the kernel's lines so the run is not failed for them.
	printf '%s\n' 'disabled \(runnable task stall\)' 'failed to run for' >>"$OUT/expected-log"
	akts selftest --only bounded_wait --no-guard --json >"$json" 2>"$OUT/bounded_wait_noguard.stderr"
	local verdict
	verdict=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["checks"][0]
print(c["status"], "SCX_EXIT_ERROR_STALL" in c["detail"], c["detail"][:160].replace("\n", " "), sep="\t")
' "$json" 2>/dev/null)
	local status stalled detail
	IFS=$'\t' read -r status stalled detail <<<"$verdict"
	if [[ $status == fail && $stalled == True ]]; then
		ok "without the guard the same check fails: the kernel ejected akts for a stall ($detail)"
	else
		not_ok "without the guard the check should fail with a stall ejection (status '$status': $detail)"
	fi
}
