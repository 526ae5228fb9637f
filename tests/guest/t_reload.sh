# Reload (src/daemon/reload.h): kill -HUP keeps the daemon's pid and applies a changed objective and classes (a
# process no rule names any more gets its own policy back, an explicit class stays, a moved decision log followed);
# a broken file, and one that changes a key read at start only, change nothing and are reported in akts status and
# by akts reload; 100 SIGHUPs in a second, the file broken and mended during them, leave the daemon serving with
# the last good config; a daemon in a terminal reloads on kill -HUP and stops cleanly when the terminal closes or
# when its parent relays a SIGHUP (as sudo does).
RL_SOCK=/run/akts/reload.sock

# rl_status EXPR: a Python expression on the daemon's status `s`.
rl_status() {
	akts status --json --socket "$RL_SOCK" 2>/dev/null | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)" 2>/dev/null
}
rl_objective_ms() { rl_status 's["reasoning"]["objective"]["limits"][0]["max_ms"]'; }
# rl_config OBJECTIVE_MS CLASSES [EXTRA]: the daemon's config, written whole at once (a reload never reads half).
# Its scan every 10 minutes: classes that apply within seconds were applied by the pass a reload starts.
rl_config() {
	cat >/tmp/akts-reload.json.tmp <<JSON
{"socket": "$RL_SOCK", "policies": ["latency", "throughput"], "initial": "latency", "audit_log": "",
 "state_file": "", "decision_log": {"path": "/tmp/akts-reload-decisions.jsonl"}, "rescan_interval_ms": 600000,
 "objective": {"signal": "lc_wait_p99", "max": "$1ms"}, "classes": $2 ${3:-}}
JSON
	mv /tmp/akts-reload.json.tmp /tmp/akts-reload.json
}
# rl_wait EXPR SECONDS: 0 when the status expression prints True within SECONDS.
rl_wait() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ $(rl_status "$1") == True ]] && return 0
		sleep 0.1
	done
	return 1
}
rl_policy() { chrt -p "$1" 2>/dev/null | sed -n 's/.*scheduling policy: //p' | head -n 1; }

t_reload() {
	local log=$OUT/reload_daemon.log out rc i
	cp /bin/sleep /tmp/lcjob
	cp /bin/sleep /tmp/bejob
	cp /bin/sleep /tmp/pinned
	/tmp/lcjob 600 &
	local lc=$!
	/tmp/bejob 600 &
	local be=$!
	/tmp/pinned 600 &
	local pinned=$!
	rm -f /tmp/akts-reload-decisions.jsonl*
	rl_config 20 '[{"class": "be", "comm": "bejob"}]' ', "controller": {"name": "learner", "learner": {"state": ""}}'
	# No terminal (as under systemd): every SIGHUP is a reload, whoever sends it (here its parent, this shell).
	akts daemon -c /tmp/akts-reload.json </dev/null >"$log" 2>&1 &
	local dpid=$!
	for i in $(seq 1 150); do [[ -S $RL_SOCK ]] && break; sleep 0.1; done
	akts classify --socket "$RL_SOCK" "$pinned" lc >/dev/null
	if rl_wait "any(m['pid'] == $be for m in s['managed_processes'])" 5 && [[ $(rl_policy $be) == SCHED_EXT* ]]; then
		ok "before the reload: bejob managed (be, in SCHED_EXT), pinned explicitly lc"
	else
		not_ok "before the reload: bejob managed: $(rl_status 's["managed_processes"]')"
	fi

	# A changed objective and classes; the decision log moved away as logrotate would.
	mv /tmp/akts-reload-decisions.jsonl /tmp/akts-reload-decisions.jsonl.1
	rl_config 35 '[{"class": "lc", "comm": "lcjob"}, {"class": "be", "comm": "pinned"}]' \
		', "controller": {"name": "learner", "learner": {"state": ""}}'
	kill -HUP $dpid
	if rl_wait 's["reload"]["last"] is not None and s["reload"]["last"]["ok"]' 3 && kill -0 $dpid 2>/dev/null &&
		[[ $(rl_objective_ms) == 35.0 ]]; then
		ok "kill -HUP keeps the daemon (pid $dpid) and applies the new objective: $(rl_status 's["reasoning"]["objective"]["describe"]')"
	else
		not_ok "kill -HUP applies the new objective: alive $(kill -0 $dpid 2>&1 && echo yes), objective $(rl_objective_ms), reload $(rl_status 's["reload"]')"
	fi
	out=$(rl_status '",".join(s["reload"]["last"]["changed"])')
	[[ $out == "classes,objective" ]] && ok "the reload names what changed: $out" || not_ok "the reload names what changed: $out"
	if rl_wait "{m['pid']: (m['class'], m['reason']) for m in s['managed_processes']}.get($lc) == ('lc', 'comm lcjob')" 3 &&
		rl_wait "not any(m['pid'] == $be for m in s['managed_processes'])" 3 &&
		rl_wait "{m['pid']: (m['class'], m['reason']) for m in s['managed_processes']}.get($pinned) == ('lc', 'explicit')" 1 &&
		[[ $(rl_policy $be) == SCHED_OTHER* ]]; then
		ok "the new classes apply at once: lcjob lc by its rule, bejob released to SCHED_OTHER, pinned's explicit lc kept"
	else
		not_ok "the new classes apply: $(rl_status 's["managed_processes"]'), bejob $(rl_policy $be)"
	fi
	if grep -q '"source":"reload"' /tmp/akts-reload-decisions.jsonl 2>/dev/null &&
		! grep -q '"action":"controller"' /tmp/akts-reload-decisions.jsonl; then
		ok "the decision log moved away (as logrotate does) is followed by a new file, the reload's objective change in it; the learner, its settings unchanged, runs on"
	else
		not_ok "the decision log moved away is followed by a new file with the reload's record: $(head -c 300 /tmp/akts-reload-decisions.jsonl 2>&1)"
	fi

	# A broken file, and a key read at start only: nothing changes, the refusal is reported.
	echo '{"socket": "'"$RL_SOCK"'", "objective": {"signal": "lc_wait_p99", "max": "50ms"}, ' >/tmp/akts-reload.json
	kill -HUP $dpid
	if rl_wait 's["reload"]["last"]["ok"] is False' 3 && [[ $(rl_objective_ms) == 35.0 ]] && kill -0 $dpid 2>/dev/null &&
		rl_wait "{m['pid']: m['class'] for m in s['managed_processes']}.get($lc) == 'lc'" 1; then
		ok "a broken file changes nothing (objective, classes) and is reported: $(rl_status 's["reload"]["last"]["error"][:120]')"
	else
		not_ok "a broken file changes nothing: objective $(rl_objective_ms), reload $(rl_status 's["reload"]')"
	fi
	akts status --socket "$RL_SOCK" | grep -q '^reload .*REFUSED, nothing changed' &&
		ok "akts status says the last reload was refused" || not_ok "akts status says the last reload was refused: $(akts status --socket "$RL_SOCK" | grep '^reload')"
	rl_config 50 '[]' ', "policies": ["latency", "throughput", "fifo"], "switch_all": true'
	out=$(akts reload --socket "$RL_SOCK" 2>&1)
	rc=$?
	if ((rc == 2)) && [[ $out == *"policies, switch_all are read at start only"* ]] && [[ $(rl_objective_ms) == 35.0 ]]; then
		ok "akts reload refuses keys read at start only, naming them (exit 2), and changes nothing: ${out:0:150}"
	else
		not_ok "akts reload refuses keys read at start only (exit $rc): $out; objective $(rl_objective_ms)"
	fi

	# The storm: 100 SIGHUPs in a second while the file is broken and mended; the last one good.
	local before t0 storm_ms
	before=$(rl_status 's["reload"]["reloads"]')
	t0=$(date +%s%N)
	for i in $(seq 1 100); do
		case $i in
		1) rl_config 40 '[]' ;;
		30) echo '{"objective": ' >/tmp/akts-reload.json ;;
		60) rl_config 45 '[{"class": "be", "comm": "bejob"}]' ;;
		esac
		kill -HUP $dpid 2>/dev/null
		((i % 10)) || sleep 0.05
	done
	storm_ms=$((($(date +%s%N) - t0) / 1000000))
	sleep 0.5
	local n refused
	n=$(($(rl_status 's["reload"]["reloads"]') - before))
	refused=$(rl_status 's["reload"]["refused"]')
	# One reload a tick (100 ms) at most: a storm is coalesced, however long the guest took to send it.
	if kill -0 $dpid 2>/dev/null && [[ $(rl_objective_ms) == 45.0 ]] && rl_wait 's["reload"]["last"]["ok"]' 1 &&
		rl_wait "{m['pid']: m['class'] for m in s['managed_processes']}.get($be) == 'be'" 3 &&
		((n >= 1 && n <= storm_ms / 100 + 7)); then
		ok "100 SIGHUPs in $storm_ms ms: the daemon serves with the last good config (objective 45 ms, bejob be again); $n reloads, $refused refused in all"
	else
		not_ok "100 SIGHUPs in $storm_ms ms: alive $(kill -0 $dpid 2>&1 && echo yes), objective $(rl_objective_ms), $n reloads, last $(rl_status 's["reload"]["last"]')"
	fi
	out=$(akts switch --socket "$RL_SOCK" throughput 2>&1) && ok "after the storm the socket switches: $out" ||
		not_ok "after the storm the socket switches: $out"

	# akts reload applies a change and says which.
	rl_config 45 '[{"class": "be", "comm": "bejob"}]' ', "controller": {"name": "detector"}'
	out=$(akts reload --socket "$RL_SOCK" 2>&1)
	if [[ $out == "reloaded: applied controller" ]] && [[ $(rl_status 's["reasoning"]["controller"]') == detector ]]; then
		ok "akts reload applies a new controller: $out"
	else
		not_ok "akts reload applies a new controller: $out, controller $(rl_status 's["reasoning"]["controller"]')"
	fi
	# New telemetry: a new period, windows numbered on from the old thread's.
	local seq0 seq1
	seq0=$(akts stats --json --socket "$RL_SOCK" | python3 -c 'import json,sys; print(json.load(sys.stdin)["window"]["seq"])')
	rl_config 45 '[{"class": "be", "comm": "bejob"}]' ', "controller": {"name": "detector"}, "telemetry": {"period": "200ms"}'
	out=$(akts reload --socket "$RL_SOCK" 2>&1)
	sleep 2
	seq1=$(akts stats --json --socket "$RL_SOCK" | python3 -c 'import json,sys; print(json.load(sys.stdin)["window"]["seq"])')
	local period
	period=$(akts telemetry --json -n 1 --socket "$RL_SOCK" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["period_s"], 2))')
	if [[ $out == "reloaded: applied telemetry" && $period == 0.2 ]] && ((seq1 > seq0 && seq1 - seq0 <= 2 * 10 + 5)); then
		ok "a new telemetry period applies (0.2 s) and the windows run on in number ($seq0 -> $seq1 in about 2 s)"
	else
		not_ok "a new telemetry period applies: $out; period $period; windows $seq0 -> $seq1"
	fi
	# A part that cannot be built (a decision log that does not open) refuses the whole file.
	rl_config 60 '[{"class": "be", "comm": "bejob"}]' \
		', "controller": {"name": "detector"}, "telemetry": {"period": "200ms"}, "decision_log": {"path": "/proc/akts-none/d.jsonl"}'
	out=$(akts reload --socket "$RL_SOCK" 2>&1)
	rc=$?
	if ((rc == 2)) && [[ $out == *"decision log"* && $(rl_objective_ms) == 45.0 ]]; then
		ok "a decision log that cannot open refuses the file whole (exit 2; the objective stays 45 ms): ${out:0:120}"
	else
		not_ok "a decision log that cannot open refuses the file whole (exit $rc): $out; objective $(rl_objective_ms)"
	fi
	kill -TERM $dpid
	wait $dpid
	rc=$?
	((rc == 0)) && ok "SIGTERM still stops it cleanly (exit 0)" || not_ok "SIGTERM still stops it cleanly (exit $rc)"

	# In a terminal: kill -HUP from elsewhere reloads; the terminal closing stops it cleanly; so does a SIGHUP its
	# parent relays (as sudo relays its terminal's, running the command in a pty of its own).
	if command -v tmux >/dev/null; then
		rl_config 20 '[{"class": "be", "comm": "bejob"}]'
		tmux kill-session -t akts-fg 2>/dev/null
		tmux new-session -d -s akts-fg -x 120 -y 20 "exec akts daemon -c /tmp/akts-reload.json 2>$OUT/reload_fg.log"
		for i in $(seq 1 150); do [[ -S $RL_SOCK ]] && rl_status 'True' >/dev/null && break; sleep 0.1; done
		local fg
		fg=$(tmux display-message -p -t akts-fg '#{pane_pid}')
		rl_config 30 '[{"class": "be", "comm": "bejob"}]'
		kill -HUP "$fg"
		if rl_wait 's["reasoning"]["objective"]["limits"][0]["max_ms"] == 30.0' 3 && kill -0 "$fg"; then
			ok "in a terminal, kill -HUP reloads (pid $fg runs on)"
		else
			not_ok "in a terminal, kill -HUP reloads: $(tail -n 3 "$OUT/reload_fg.log" | tr '\n' '|')"
		fi
		tmux kill-session -t akts-fg
		for i in $(seq 1 100); do kill -0 "$fg" 2>/dev/null || break; sleep 0.1; done
		if ! kill -0 "$fg" 2>/dev/null && grep -q "SIGHUP, the terminal closed: shutting down" "$OUT/reload_fg.log" &&
			grep -q "detached" "$OUT/reload_fg.log" && [[ $(rl_policy $be) == SCHED_OTHER* ]]; then
			ok "its terminal closing stops it cleanly: detached, bejob given back"
		else
			not_ok "its terminal closing stops it cleanly: $(tail -n 3 "$OUT/reload_fg.log" | tr '\n' '|'), bejob $(rl_policy $be)"
			kill -TERM "$fg" 2>/dev/null
		fi
		for i in $(seq 1 50); do [[ -S $RL_SOCK ]] || break; sleep 0.1; done
		# A parent that relays its SIGHUP to the daemon, as sudo does.
		tmux new-session -d -s akts-fg -x 120 -y 20 "exec python3 -c 'import signal, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stderr=open(\"$OUT/reload_relay.log\", \"w\"))
signal.signal(signal.SIGHUP, lambda *a: p.send_signal(signal.SIGHUP))
sys.exit(p.wait())' akts daemon -c /tmp/akts-reload.json"
		for i in $(seq 1 150); do [[ -S $RL_SOCK ]] && rl_status 'True' >/dev/null && break; sleep 0.1; done
		local relay child
		relay=$(tmux display-message -p -t akts-fg '#{pane_pid}')
		child=$(pgrep -P "$relay" | head -n 1)
		kill -HUP "$relay"
		for i in $(seq 1 100); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
		if [[ -n $child ]] && ! kill -0 "$child" 2>/dev/null &&
			grep -q "SIGHUP, the terminal closed: shutting down" "$OUT/reload_relay.log"; then
			ok "a SIGHUP its parent relays (as sudo does when its terminal closes) stops it cleanly"
		else
			not_ok "a SIGHUP its parent relays stops it: child ${child:-none}, $(tail -n 2 "$OUT/reload_relay.log" | tr '\n' '|')"
			[[ -n $child ]] && kill -TERM "$child" 2>/dev/null
		fi
		tmux kill-session -t akts-fg 2>/dev/null
		for i in $(seq 1 50); do [[ -S $RL_SOCK ]] || break; sleep 0.1; done
	else
		not_ok "tmux is in the guest image (vm/build_image.sh)"
	fi
	kill $lc $be $pinned 2>/dev/null
	wait $lc $be $pinned 2>/dev/null
	return 0
}
