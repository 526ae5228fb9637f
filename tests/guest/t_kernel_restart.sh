# When the kernel ends the scheduler. Offlining or onlining a CPU makes it
# unregister akts with a restart request (the dispatcher has no
# cpu_online/offline): the daemon loads and attaches again, keeping the
# selection and the classes. An ejection (sysrq-S) with restart.on_eject
# re-attaches on the breaker's safe slot. restart.max bounds both: one more
# and the daemon stops, giving everything back.
KR_SOCK=/run/akts/kr.sock

kr_status() { # python expression on the status JSON `s`
	akts status --socket "$KR_SOCK" --json 2>/dev/null | python3 -c "
import json, sys
s = json.load(sys.stdin)
print($1)" 2>/dev/null
}

kr_wait_restarts() { # n log -> waits up to 90 s for the n-th "attached again" line and the scheduler enabled
	local i
	for i in $(seq 1 900); do
		if (($(grep -c "attached again in" "$2") >= $1)) && [[ "$(cat /sys/kernel/sched_ext/state)" == enabled ]] &&
			[[ "$(kr_status 's["scheduler"]["attached"]')" == True ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

t_kernel_restart() {
	local cfg=$OUT/kr.json log=$OUT/kr_daemon.log i
	cat >"$cfg" <<JSON
{"socket": "$KR_SOCK", "policies": ["latency", "throughput"], "initial": "throughput", "audit_log": "",
 "state_file": "", "restart": {"on_eject": true, "max": 3, "window": "10m"},
 "decision_log": {"path": "$OUT/kr_decisions.jsonl"}}
JSON
	akts daemon -c "$cfg" >"$log" 2>&1 &
	local dpid=$!
	for i in $(seq 1 200); do [[ -S $KR_SOCK ]] && break; sleep 0.05; done
	sleep 300 &
	local lc=$!
	akts classify --socket "$KR_SOCK" $lc lc >/dev/null
	if [[ ! -e /sys/devices/system/cpu/cpu1/online ]]; then
		not_ok "CPU 1 can go offline in this guest"
		kill $dpid $lc
		return
	fi
	# Provoked on purpose: the kernel's lines for a scheduler it unregisters on hotplug.
	echo 'unregistered from the main kernel' >>"$OUT/expected-log"
	local restarts=0 what label
	for what in 0 1; do
		label=$([[ $what == 0 ]] && echo offline || echo online)
		echo $what >/sys/devices/system/cpu/cpu1/online
		restarts=$((restarts + 1))
		local state
		if kr_wait_restarts $restarts "$log"; then
			state=$(kr_status 's["selected"]["policy"], s["managed_processes"][0]["class"] if s["managed_processes"] else None')
			if [[ $state == "throughput lc" ]]; then
				ok "CPU 1 $label: restarted on request, $(grep "attached again in" "$log" | tail -n1 | grep -o 'attached again in [0-9]* ms'); selection and class kept"
			else
				not_ok "CPU 1 $label: selection and class kept after the restart (got $state)"
			fi
		else
			not_ok "CPU 1 $label: the daemon restarted on the kernel's request (log: $(tail -n 3 "$log" | tr '\n' ' '))"
		fi
	done
	local cls
	cls=$(akts classify --socket "$KR_SOCK" $lc --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel_class"])')
	[[ $cls == lc ]] && ok "the kernel's class map holds the LC process again" || not_ok "the kernel's class map holds the LC process again ($cls)"

	# An ejection, with restart.on_eject: attached again on the safe slot (the built-in default).
	echo 'disabled by sysrq-S' >>"$OUT/expected-log"
	echo S >/proc/sysrq-trigger
	if kr_wait_restarts 3 "$log" && [[ "$(kr_status 's["effective"]["slot"] >= 8')" == True ]]; then
		ok "after sysrq-S: attached again on the built-in default ($(grep "attached again in" "$log" | tail -n1 | grep -o 'in [0-9]* ms'))"
	else
		not_ok "after sysrq-S: attached again on the safe slot (log: $(tail -n 3 "$log" | tr '\n' ' '))"
	fi
	grep -q '"source":"kernel"' "$OUT/kr_decisions.jsonl" && ok "the restarts are in the decision log" ||
		not_ok "the restarts are in the decision log"
	# The fourth within the window is refused: the daemon stops and gives everything back.
	echo S >/proc/sysrq-trigger
	for i in $(seq 1 200); do kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
	wait $dpid
	local rc=$?
	if ((rc != 0)) && grep -q "giving up" "$log" && chrt -p $lc | grep SCHED_OTHER >/dev/null &&
		[[ "$(cat /sys/kernel/sched_ext/state)" == disabled ]]; then
		ok "a fourth end within the window: the daemon gave up (exit $rc) and gave its processes back"
	else
		not_ok "a fourth end within the window: gave up cleanly (exit $rc; $(chrt -p $lc | head -n1); log: $(tail -n 2 "$log" | tr '\n' ' '))"
	fi
	kill $lc 2>/dev/null
	wait $lc 2>/dev/null
}
