# The preempt_wakeup check can fail: with preempt's kick off (--no-preempt-kick), a waking LC task waits for the
# BE hog's slice to end at a tick, as under latency, and the check's LC wait p99 is no longer below a tick.
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
print(c["status"], "not below a tick" in c["detail"], pre.get("lc_wait_p99_ms", "?"), c["detail"][:200].replace("\n", " "), sep="\t")
' "$json" 2>/dev/null)
	local status below p99 detail
	IFS=$'\t' read -r status below p99 detail <<<"$verdict"
	if [[ $status == fail && $below == True ]]; then
		ok "with preempt's kick off the same check fails: the LC wait p99 rose to $p99 ms ($detail)"
	else
		not_ok "with preempt's kick off the check should fail on the LC wait (status '$status': $detail)"
	fi
}
