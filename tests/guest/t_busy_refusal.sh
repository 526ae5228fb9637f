# While another sched_ext scheduler (the kernel's scx_simple) is active, akts
# must not attach; it names the scheduler and leaves it running.
wait_state() {
	local want="$1" i
	for i in $(seq 1 400); do
		[[ "$(cat /sys/kernel/sched_ext/state)" == "$want" ]] && return 0
		sleep 0.05
	done
	return 1
}

t_busy_refusal() {
	if ! command -v scx_simple >/dev/null; then
		not_ok "scx_simple is available in the guest"
		return
	fi
	scx_simple >"$OUT/scx_simple.log" 2>&1 &
	local pid=$!
	if ! wait_state enabled; then
		not_ok "scx_simple became enabled"
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return
	fi
	local json="$OUT/busy.json" rc
	akts selftest --json --only gate3_runtime_dispatch >"$json" 2>/dev/null
	rc=$?
	if ((rc != 0)) && grep -q "another sched_ext scheduler ('simple') is active" "$json" &&
		[[ "$(cat /sys/kernel/sched_ext/root/ops)" == simple ]]; then
		ok "akts refused to attach over scx_simple, named it, and left it enabled (exit $rc)"
	else
		not_ok "akts refused to attach over scx_simple (exit $rc, ops $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null))"
	fi
	kill -INT "$pid"
	wait "$pid" 2>/dev/null
	if wait_state disabled; then
		ok "scx_simple detached cleanly afterwards"
	else
		not_ok "scx_simple detached cleanly afterwards"
	fi
}
