# When the kernel ejects the scheduler (here: sysrq-S, which resets sched_ext
# to the fair class), the daemon reports the exit kind, reason and message,
# gives its processes back and exits non-zero.
t_ejection() {
	local sock=/run/akts/eject.sock log=$OUT/eject_daemon.log
	akts daemon --socket $sock >"$log" 2>&1 &
	local dpid=$! i
	for i in $(seq 1 100); do [[ -S $sock ]] && break; sleep 0.1; done
	sleep 300 &
	local victim=$!
	akts classify --socket $sock $victim lc >/dev/null
	# Provoked on purpose: declare the kernel's lines so the run is not failed for them.
	echo 'disabled by sysrq-S' >>"$OUT/expected-log"
	echo S >/proc/sysrq-trigger
	for i in $(seq 1 100); do kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
	wait $dpid
	local rc=$?
	if ((rc != 0)) && grep -q "ejected the scheduler: SCX_EXIT_SYSRQ" "$log"; then
		ok "daemon reported the ejection and exited $rc: $(grep -m1 ejected "$log" | cut -c1-120)"
	else
		not_ok "daemon reported the ejection (exit $rc; log: $(tail -n 3 "$log" | tr '\n' ' '))"
	fi
	if chrt -p $victim | grep SCHED_OTHER >/dev/null; then
		ok "its processes were given back"
	else
		not_ok "its processes were given back: $(chrt -p $victim | head -n1)"
	fi
	if [[ "$(cat /sys/kernel/sched_ext/state)" == disabled && ! -e $sock ]]; then
		ok "sched_ext disabled and the socket removed after the ejection"
	else
		not_ok "sched_ext disabled and the socket removed after the ejection"
	fi
	kill $victim 2>/dev/null
	wait $victim 2>/dev/null
}
