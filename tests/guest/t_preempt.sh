# The preempt_wakeup check can fail: with preempt's kick off (--no-preempt-kick), a waking LC task waits for the
# BE hog's 20 ms slice to end, and the check's mean LC wait is no longer a fraction of latency's.
# selftest's own preempt_wakeup (kick on) passes in t_selftest; this is the negative control that shows the
# kick is what it measures.
t_preempt() {
	local json="$OUT/preempt_nokick.json"
	akts selftest --only preempt_wakeup --no-preempt-kick --json >"$json" 2>"$OUT/preempt_nokick.stderr"
	local verdict
	verdict=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["checks"][0]
pre = c["counts"].get("preempt", {})
print(c["status"], "not under 0.75 of latency" in c["detail"], pre.get("lc_wait_mean_ms", "?"), c["detail"][:200].replace("\n", " "), sep="\t")
' "$json" 2>/dev/null)
	local status slower mean detail
	IFS=$'\t' read -r status slower mean detail <<<"$verdict"
	if [[ $status == fail && $slower == True ]]; then
		ok "with preempt's kick off the same check fails: the mean LC wait rose to $mean ms ($detail)"
	else
		not_ok "with preempt's kick off the check should fail on the LC wait (status '$status': $detail)"
	fi
}
