# --switch-all: the dispatcher manages every task, not only SCHED_EXT ones.
ext_enabled() { awk '/^ext.enabled/ {print $3}' /proc/$1/sched 2>/dev/null; }

t_switch_all() {
	local sock=/run/akts/all.sock i
	sleep 60 &
	local plain=$!
	akts daemon --switch-all --socket $sock >"$OUT/switch_all.log" 2>&1 &
	local dpid=$!
	for i in $(seq 1 100); do [[ -S $sock ]] && break; sleep 0.1; done
	local st
	st=$(akts status --socket $sock --json)
	if grep -q '"mode": "all tasks"' <<<"$st" && [[ "$(ext_enabled $plain)" == 1 ]]; then
		ok "with --switch-all an ordinary SCHED_OTHER process runs in sched_ext"
	else
		not_ok "with --switch-all an ordinary SCHED_OTHER process runs in sched_ext (ext.enabled=$(ext_enabled $plain))"
	fi
	akts stats --socket $sock -i 500ms -n 1 --json >"$OUT/switch_all_stats.json"
	if python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["total"]["entries"] > 0 else 1)' \
		"$OUT/switch_all_stats.json"; then
		ok "the dispatcher schedules the whole system"
	else
		not_ok "the dispatcher schedules the whole system"
	fi
	kill -INT $dpid
	wait $dpid
	local rc=$?
	if ((rc == 0)) && [[ "$(cat /sys/kernel/sched_ext/state)" == disabled && "$(ext_enabled $plain)" != 1 ]]; then
		ok "SIGINT: detached, every task back in the fair class"
	else
		not_ok "SIGINT: detached, every task back in the fair class (exit $rc)"
	fi
	kill $plain
	wait $plain 2>/dev/null
}
