# A daemon that dies and comes back (src/daemon/reaper.h, state_file.h): the
# daemon is SIGKILLed during a switch storm with LC and BE work running. Its
# reaper gives every thread the daemon moved its own policy back (nothing is
# lost or left in SCHED_EXT); the next daemon takes up the explicit classes and
# the selection from /run/akts/state.json; switching works; a clean stop gives
# everything back again.
RST_SOCK=/run/akts/restart.sock

rst_status() { # python expression on the status JSON `s`
	akts status --socket "$RST_SOCK" --json | python3 -c "
import json, sys
s = json.load(sys.stdin)
print($1)"
}

rst_start() { # log -> starts a daemon in this shell (so it can be waited for) and waits for its socket:
	# RST_PID, and RST_TOOK the seconds from start to answering
	# On a clock, not a count of tries: beside the hogs, verifying has taken 21 s on TCG.
	local t0 end=$((SECONDS + 120))
	t0=$(date +%s.%N)
	akts daemon -c "$OUT/restart.json" >"$1" 2>&1 &
	RST_PID=$!
	until [[ -S $RST_SOCK ]] && akts status --socket "$RST_SOCK" >/dev/null 2>&1; do
		((SECONDS < end)) && kill -0 $RST_PID 2>/dev/null || break
		sleep 0.05
	done
	RST_TOOK=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)")
}

rst_threads() { # pids... -> "tid policy" for every thread (one that exits while it is read is left out)
	local p t pol
	for p in "$@"; do
		for t in /proc/"$p"/task/*; do
			pol=$(chrt -p "${t##*/}" 2>/dev/null | head -n1 | awk '{print $NF}')
			[[ -n $pol ]] && echo "${t##*/} $pol"
		done
	done
}

rst_policies() { # pids... -> policy counts, e.g. "4 SCHED_EXT"
	rst_threads "$@" | awk '{print $2}' | sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? " " : ""), $1, $2}'
}

rst_ext_tasks() { # every task on the system still in SCHED_EXT, as "tid comm"
	python3 - <<'PY'
import glob
for stat in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
    try:
        text = open(stat).read()
    except OSError:
        continue
    fields = text[text.rindex(")") + 2:].split()
    if fields[38] == "7":  # policy, field 41 of stat
        print(stat.split("/")[4], text[text.index("(") + 1:text.rindex(")")])
PY
}

rst_storm() { # seconds -> switches through one connection as fast as the daemon answers
	python3 - "$RST_SOCK" "$1" <<'PY'
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
f = s.makefile("rwb")
end, n = time.time() + float(sys.argv[2]), 0
try:
    while time.time() < end:
        f.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": "v1.switch", "params": {"target": n % 2}}).encode() + b"\n")
        f.flush()
        if not f.readline():
            break
        n += 1
except OSError:
    pass
print(n)
PY
}

t_restart() {
	local cfg=$OUT/restart.json i
	cat >"$cfg" <<JSON
{"socket": "$RST_SOCK", "policies": ["latency", "throughput"], "initial": "latency", "audit_log": "",
 "breaker": {"armed": false}, "decision_log": {"path": "$OUT/restart_decisions.jsonl"},
 "classes": [{"class": "be", "comm": "stress-ng"}]}
JSON
	rm -f /run/akts/state.json /run/akts/state.json.selected /tmp/akts-restart-spawn
	# Pins a selftest killed in pinned_maps would leave (its pid long gone): removed and named at start.
	local stale=/sys/fs/bpf/akts-selftest-4000000
	mkdir -p $stale
	rst_start "$OUT/restart_daemon1.log"
	local d1=$RST_PID
	if [[ ! -e $stale ]] && grep -q "removed stale pins.*$stale" "$OUT/restart_daemon1.log"; then
		ok "stale pins of a dead process are removed and named in the log"
	else
		not_ok "stale pins of a dead process are removed and named in the log"
	fi
	# BE: two stress-ng hogs, by rule. LC: a SCHED_BATCH process with four threads, classified explicitly.
	stress-ng --cpu 2 --timeout 120s -q &
	local hogs=$!
	# Besides its four threads it starts a short-lived one every 20 ms: threads the daemon's record cannot know yet.
	chrt -b 0 python3 -c '
import threading, time
def spin():
    while True:
        sum(range(2000)); time.sleep(0.001)
def brief():
    end = time.time() + 0.2
    while time.time() < end:
        sum(range(2000)); time.sleep(0.001)
def spawner():
    import os
    while not os.path.exists("/tmp/akts-restart-spawn"):
        time.sleep(0.05)
    while True:
        threading.Thread(target=brief, daemon=True).start(); time.sleep(0.02)
for _ in range(3):
    threading.Thread(target=spin, daemon=True).start()
threading.Thread(target=spawner, daemon=True).start()
spin()' &
	local lc=$!
	# Classified once its five threads exist: a thread born in SCHED_EXT has no policy of its own on record and
	# comes back SCHED_OTHER (the tracker's rule), and a slow guest may still be starting python here.
	for i in $(seq 1 100); do
		(($(ls /proc/$lc/task 2>/dev/null | wc -l) >= 5)) && break
		sleep 0.1
	done
	akts classify --socket "$RST_SOCK" $lc lc >/dev/null
	for i in $(seq 1 60); do
		[[ "$(rst_status 'sum(1 for m in s["managed_processes"] if m["comm"].startswith("stress-ng"))')" -ge 3 ]] && break
		sleep 0.05
	done
	local procs="$lc $hogs $(pgrep -P $hogs | tr '\n' ' ')"
	local listing threads_before long_lived
	listing=$(rst_threads $procs)
	threads_before=$(wc -l <<<"$listing")
	long_lived=$(awk '{print $1}' <<<"$listing" | sort -n | tr '\n' ' ')
	if ! grep -qv SCHED_EXT <<<"$listing"; then
		ok "before: $threads_before threads of LC and BE work in SCHED_EXT"
	else
		not_ok "before: every thread in SCHED_EXT ($(awk '{print $2}' <<<"$listing" | sort | uniq -c | tr '\n' ' '))"
	fi
	touch /tmp/akts-restart-spawn # from now on the LC process starts its short-lived threads
	sleep 1

	# SIGKILL in the middle of a switch storm.
	local storm_out=$OUT/restart_storm.txt
	rst_storm 3 >"$storm_out" &
	local storm=$!
	sleep 1.5
	local t_kill
	t_kill=$(date +%s.%N)
	kill -KILL $d1
	wait $d1 2>/dev/null
	wait $storm
	# The kernel unregisters akts with the last reference to its link; the reaper gives the threads back.
	local left=1
	for i in $(seq 1 200); do
		left=$(rst_ext_tasks | wc -l)
		[[ $left == 0 && "$(cat /sys/kernel/sched_ext/state)" == disabled ]] && break
		sleep 0.02
	done
	local t_back
	t_back=$(python3 -c "import sys; print(f'{(float(sys.argv[2]) - float(sys.argv[1])) * 1000:.0f}')" "$t_kill" "$(date +%s.%N)")
	local lost=0 p t
	for p in $procs; do kill -0 "$p" 2>/dev/null || lost=$((lost + 1)); done
	for t in $long_lived; do [[ -d /proc/$t ]] || lost=$((lost + 1)); done
	if ((lost == 0)); then
		ok "SIGKILL after $(cat "$storm_out") storm switches: tasks lost 0 ($(echo $procs | wc -w) processes and their $threads_before threads alive)"
	else
		not_ok "SIGKILL during the storm: $lost processes or threads lost"
	fi
	local lc_pol be_pol
	lc_pol=$(rst_policies $lc)
	be_pol=$(rst_policies $hogs $(pgrep -P $hogs))
	# The LC process's threads: its own four SCHED_BATCH, the short-lived ones born since the record SCHED_OTHER.
	local lc_long
	lc_long=$(for t in $long_lived; do [[ -d /proc/$lc/task/$t ]] && chrt -p $t | head -n1 | awk '{print $NF}'; done | sort -u | tr '\n' ' ')
	if [[ $left == 0 && $lc_long == "SCHED_BATCH " && $lc_pol != *SCHED_EXT* && $be_pol == *" SCHED_OTHER" && $be_pol != *" "*" "* ]]; then
		ok "the reaper gave every thread its own policy back (all seen within ${t_back} ms of the kill, polling), none left in SCHED_EXT system-wide (LC: $lc_pol; BE: $be_pol)"
	else
		not_ok "the reaper gave every thread its own policy back (left in SCHED_EXT: $(rst_ext_tasks | head -n 5 | tr '\n' ' '); LC long-lived: $lc_long; LC: $lc_pol; BE: $be_pol)"
	fi
	grep -q "akts-reaper" "$OUT/restart_daemon1.log" && diag "$(grep -m1 akts-reaper "$OUT/restart_daemon1.log")"
	local sel_file
	sel_file=$(python3 -c '
import json
s = json.load(open("/run/akts/state.json"))
sel = json.load(open("/run/akts/state.json.selected"))  # rewritten at every switch
print(sel["slot"] if sel["daemon_pid"] == s["daemon_pid"] else s["selected"]["slot"], s["reaped"])')

	# The next daemon: explicit class and selection as before, every thread back in SCHED_EXT.
	rst_start "$OUT/restart_daemon2.log"
	local d2=$RST_PID took=$RST_TOOK pols
	for i in $(seq 1 60); do
		pols=$(rst_policies $procs)
		[[ $pols == *SCHED_EXT && $pols != *" "*" "* ]] && break
		sleep 0.05
	done
	local cls sel
	cls=$(akts classify --socket "$RST_SOCK" $lc --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["kernel_class"], (r["managed"] or {}).get("reason"))')
	sel=$(rst_status 's["selected"]["slot"]')
	pols=$(rst_policies $procs)
	if [[ $cls == "lc explicit" && "$sel ${sel_file#* }" == "${sel_file% *} True" && $pols == *SCHED_EXT && $pols != *" "*" "* ]]; then
		ok "restarted in ${took} s: the LC process is still explicit lc, selection slot $sel as the state file kept it, every thread back in SCHED_EXT"
	else
		not_ok "restarted: class '$cls' (want 'lc explicit'), selection $sel (state file: $sel_file), threads $pols"
	fi

	# A switch answered is a switch kept: to the other slot, then a kill right after the answer.
	local want=throughput
	[[ $sel == 1 ]] && want=latency
	akts switch --socket "$RST_SOCK" $want >/dev/null
	kill -KILL $d2
	wait $d2 2>/dev/null
	for i in $(seq 1 200); do [[ "$(cat /sys/kernel/sched_ext/state)" == disabled ]] && break; sleep 0.05; done
	rst_start "$OUT/restart_daemon3.log"
	local d3=$RST_PID
	took=$RST_TOOK
	sel=$(rst_status 's["selected"]["policy"]')
	if [[ $sel == "$want" ]]; then
		ok "a switch answered just before a SIGKILL survives it (restarted in ${took} s on $sel)"
	else
		not_ok "a switch answered just before a SIGKILL survives it (selected $sel, want $want)"
	fi
	local out other=latency
	[[ $want == latency ]] && other=throughput
	out=$(akts switch --socket "$RST_SOCK" $other 2>&1)
	if [[ "$(rst_status 's["effective"]["policy"]')" == "$other" ]]; then
		ok "switching works after the restarts: ${out//$'\n'/ }"
	else
		not_ok "switching works after the restarts (${out//$'\n'/ })"
	fi
	# A clean stop: every thread its own policy, the state file says so and keeps the explicit class.
	kill -TERM $d3
	wait $d3
	local rc=$?
	lc_pol=$(for t in $long_lived; do [[ -d /proc/$lc/task/$t ]] && chrt -p $t | head -n1 | awk '{print $NF}'; done | sort | uniq -c | awk '{printf "%s %s", $1, $2}')
	local clean
	clean=$(python3 -c '
import json
s = json.load(open("/run/akts/state.json"))
print(s["clean"], [p["explicit"] for p in s["tracker"]["processes"] if p["class"] == "lc"], sum(len(p["threads"]) for p in s["tracker"]["processes"]))')
	if ((rc == 0)) && [[ $lc_pol == *" SCHED_BATCH" && $lc_pol != *" "*" "* && $clean == "True [True] 0" && -z "$(rst_ext_tasks)" ]]; then
		ok "a clean stop gives every thread back and keeps the explicit class for the next daemon ($clean)"
	else
		not_ok "a clean stop (exit $rc; LC: $lc_pol; state: $clean)"
	fi
	if ! pgrep -x akts-reaper >/dev/null; then
		ok "no reaper left behind"
	else
		not_ok "no reaper left behind: $(pgrep -a -x akts-reaper)"
	fi
	kill $lc $hogs 2>/dev/null
	wait $lc $hogs 2>/dev/null
	rm -f /run/akts/state.json /run/akts/state.json.selected /tmp/akts-restart-spawn
}
