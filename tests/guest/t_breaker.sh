# The circuit breaker in the daemon, on a policy of the library: under
# `throughput` an LC task waits behind ten CPU hogs on one CPU (20 ms slices
# each), so its oldest wait passes the breaker's threshold before the guard's
# max_wait. The breaker trips in the kernel, the daemon reports it (status,
# decision log), an operator's switch cannot undo it, and after the cool-down
# the selection rules again.
breaker_field() { # python expression on the status JSON `s`
	akts status --socket "$BRK_SOCK" --json | python3 -c "
import json, sys
s = json.load(sys.stdin)
print($1)"
}

t_breaker() {
	BRK_SOCK=/run/akts/breaker.sock
	local cfg=$OUT/breaker.json log=$OUT/breaker_daemon.log dec=$OUT/breaker_decisions.jsonl i
	cat >"$cfg" <<JSON
{"socket": "$BRK_SOCK", "policies": ["latency", "throughput"], "initial": "throughput", "audit_log": "",
 "breaker": {"cooldown": "6s", "calm": "500ms"},
 "decision_log": {"path": "$dec"},
 "classes": [{"class": "be", "comm": "stress-ng"}]}
JSON
	# CPU 0 is the contest (ten hogs and the LC task); this shell, the daemon and every check run on CPU 1. They
	# are fair-class tasks, which in partial mode preempt SCHED_EXT ones: a python3 burning CPU 0 for a moment makes
	# the LC task wait past the breaker's threshold under latency (reproduced), a trip no policy caused.
	local cpus
	cpus=$(taskset -pc $BASHPID | sed 's/.*: //')
	taskset -pc 1 $BASHPID >/dev/null
	akts daemon -c "$cfg" >"$log" 2>&1 &
	local dpid=$!
	for i in $(seq 1 100); do [[ -S $BRK_SOCK ]] && break; sleep 0.1; done
	if [[ "$(breaker_field 's["breaker"]["params"]["armed"]')" == True ]]; then
		ok "the breaker is armed by default: $(breaker_field 's["breaker"]["params"]' | cut -c1-160)"
	else
		not_ok "the breaker is armed by default"
	fi
	taskset -c 0 stress-ng --cpu 10 --timeout 60s >/dev/null 2>&1 &
	local hogs=$!
	taskset -c 0 sh -c 'while :; do :; done' &
	local lc=$!
	akts classify --socket "$BRK_SOCK" $lc lc >/dev/null
	local trips=0
	for i in $(seq 1 100); do
		akts status --socket "$BRK_SOCK" | grep '^breaker .*TRIPPED' >/dev/null && break
		sleep 0.1
	done
	trips=$(breaker_field 's["breaker"]["trips"]')
	if ((trips > 0)); then
		ok "the breaker tripped under throughput: $(breaker_field 's["breaker"]["last_trip"]')"
	else
		not_ok "the breaker tripped under throughput within 10 s"
	fi
	local eff
	eff=$(breaker_field 's["effective"]["slot"], s["override"]["active"], s["breaker"]["holding_slot"]')
	if [[ $eff == "2147483647 True default" ]]; then
		ok "the built-in default runs while tripped (effective, override, holding: $eff)"
	else
		not_ok "the built-in default runs while tripped (got $eff)"
	fi
	# An operator's (or a controller's) store of another slot cannot undo it; the daemon says so. The
	# cool-down is 6 s so that it outlasts the checks before and after the switch: on TCG, with ten hogs,
	# those took more than the 1.2 s a 2 s cool-down left them on CI (the trip was 0.8 s old at the first).
	local out
	out=$(akts switch --socket "$BRK_SOCK" latency 2>&1)
	eff=$(breaker_field 's["effective"]["slot"]')
	if [[ $eff == 2147483647 ]] && grep -q override <<<"$out"; then
		ok "a switch during the cool-down does not undo the trip: ${out//$'\n'/ }"
	else
		not_ok "a switch during the cool-down does not undo the trip (effective $eff; ${out//$'\n'/ })"
	fi
	if grep -q '"source":"breaker".*"action":"trip"\|"action":"trip".*"source":"breaker"' "$dec" ||
		akts log --socket "$BRK_SOCK" --json 2>/dev/null | grep '"breaker"' >/dev/null; then
		ok "the trip is in the decision log"
	else
		not_ok "the trip is in the decision log"
	fi
	grep -q "circuit breaker tripped" "$log" && ok "the daemon logged the trip: $(grep -m1 'circuit breaker tripped' "$log" | cut -c1-160)" ||
		not_ok "the daemon logged the trip"
	# latency protects the LC task: after the cool-down the breaker lets go, and does not trip again.
	akts switch --socket "$BRK_SOCK" latency >/dev/null
	local tripped=True
	for i in $(seq 1 120); do # the text status, not python3 each 0.1 s: fair-class work delays the LC task too
		akts status --socket "$BRK_SOCK" | grep '^breaker .*TRIPPED' >/dev/null || { tripped=False; break; }
		sleep 0.1
	done
	eff=$(breaker_field 's["effective"]["slot"], s["breaker"]["trips"]')
	if [[ $tripped == False && ${eff%% *} == 0 ]]; then
		ok "after the cool-down latency runs again (effective, trips: $eff)"
	else
		not_ok "after the cool-down latency runs again (tripped $tripped; effective, trips: $eff)"
	fi
	# Counted from here: trips under throughput may repeat until the switch above lands.
	trips=${eff##* }
	sleep 1
	local trips2
	trips2=$(breaker_field 's["breaker"]["trips"]')
	if [[ $trips =~ ^[0-9]+$ && $trips2 == "$trips" ]]; then
		ok "no trip under latency ($trips2 in all)"
	else
		not_ok "no trip under latency (trips $trips -> $trips2; the last: $(breaker_field 's["breaker"]["last_trip"]'))"
	fi
	kill $lc $hogs 2>/dev/null
	wait $lc $hogs 2>/dev/null
	kill -TERM $dpid
	wait $dpid
	local rc=$?
	taskset -pc "$cpus" $BASHPID >/dev/null
	if ((rc == 0)) && [[ "$(cat /sys/kernel/sched_ext/state)" == disabled ]]; then
		ok "the daemon stopped cleanly after the trips (no ejection)"
	else
		not_ok "the daemon stopped cleanly after the trips (exit $rc; $(tail -n 2 "$log" | tr '\n' ' '))"
	fi
}
