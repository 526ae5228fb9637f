# The learner controller resumes from what it had learnt (src/reasoning/learner.h):
# a daemon runs the learner (objective: the LC wait p99 under 20 ms) beside
# best-effort hogs through a burst of latency-critical work, and is SIGKILLed in
# the middle of the next one. The next daemon reads the learner's own state file
# (never the daemon's state file, which the restart also takes up), and at the
# following burst goes into latency on what it knows ("expected to meet the
# objective"), where a learner starting from nothing can only pick the policy
# least expected to miss. A state file that fails to load is reported, set
# aside whole, and costs the daemon nothing (it starts, its classes and
# selection intact).
t_learner() {
	local sock=/run/akts/learner.sock cfg=/tmp/akts-learner.json learnt=/tmp/akts-learnt.json
	local state=/tmp/akts-learner-state.json dlog=$OUT/learner_decisions.jsonl
	rm -f "$learnt" "$learnt".* "$state" "$dlog"
	cat >"$cfg" <<JSON
{"socket": "$sock", "state_file": "$state", "policies": ["latency", "throughput"], "initial": "throughput",
 "objective": {"signal": "lc_wait_p99", "max": "20ms"},
 "controller": {"name": "learner", "min_dwell": "500ms", "operator_grace": "1s",
                "learner": {"state": "$learnt", "save_every": 10}},
 "decision_log": {"path": "$dlog"}}
JSON
	local dpid
	lrn_start() { # log
		akts daemon -c "$cfg" >"$1" 2>&1 &
		dpid=$!
		local end=$((SECONDS + 60))
		until [[ -S $sock ]] && akts status --socket $sock >/dev/null 2>&1; do
			((SECONDS < end)) && kill -0 $dpid 2>/dev/null || break
			sleep 0.1
		done
	}
	lrn_start "$OUT/learner_daemon1.log"
	akts run --socket $sock --class be -- stress-ng --cpu 2 --timeout 70s >/dev/null 2>&1 &
	local be=$!
	sleep 4
	# The first burst: latency-critical work that wakes and sleeps (70% load per worker).
	akts run --socket $sock --class lc -- stress-ng --cpu 2 --cpu-load 70 --timeout 8s >/dev/null 2>&1
	sleep 4
	# The second burst, and the daemon SIGKILLed in its middle.
	akts run --socket $sock --class lc -- stress-ng --cpu 2 --cpu-load 70 --timeout 6s >/dev/null 2>&1 &
	local lc2=$!
	sleep 3
	kill -KILL $dpid
	wait $dpid 2>/dev/null
	verdicts < <(python3 - "$learnt" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
    entry = next(iter(j["objectives"].values()))["policies"]
    seen = {p: sum(c["met"]) + sum(c["missed"]) for p, c in entry.items()}
    ok = (j.get("format") == "akts learner state" and j.get("version") == 4 and set(seen) >= {"latency", "throughput"}
          and all(v > 0 for v in seen.values()))
    print(("ok" if ok else "not") + "\tthe learner's state file outlived the SIGKILL with both policies' evidence (%s)"
          % ", ".join("%s %.0f windows" % kv for kv in sorted(seen.items())))
except Exception as e:
    print("not\tthe learner's state file outlived the SIGKILL (%s: %s)" % (type(e).__name__, e))
PY
)
	wait $lc2 2>/dev/null
	lrn_start "$OUT/learner_daemon2.log"
	# The learner reads its file at its first window.
	for _ in $(seq 1 50); do grep -q "learner: .* read from\|learner: .*set aside" "$OUT/learner_daemon2.log" && break; sleep 0.1; done
	if grep -q "learner: 2 policies learnt for .* read from $learnt" "$OUT/learner_daemon2.log"; then
		ok "the next daemon's learner read what the last one had learnt: $(grep -o 'learner: 2 policies learnt.*' "$OUT/learner_daemon2.log" | head -n1)"
	else
		not_ok "the next daemon's learner read what the last one had learnt ($(grep -i learner "$OUT/learner_daemon2.log" | tail -n 2 | tr '\n' ' '))"
	fi
	# What the learner holds before it has learnt anything itself: the last daemon's evidence.
	akts controller --socket $sock --json >"$OUT/learner_resumed.json" 2>/dev/null
	# The restart kept the last selection (latency, mid-burst): an operator moves to throughput in the calm (the
	# learner's grace is 1 s; it may move back if latency gives batch work as much).
	if ! akts switch --socket $sock throughput >"$OUT/learner_switch.txt" 2>&1; then
		not_ok "an operator's switch to throughput before the third burst ($(head -c 200 "$OUT/learner_switch.txt"))"
	fi
	sleep 3
	local b3
	b3=$(date +%s.%N)
	akts run --socket $sock --class lc -- stress-ng --cpu 2 --cpu-load 70 --timeout 6s >/dev/null 2>&1 &
	local lc3=$!
	sleep 3
	akts controller --socket $sock --json >"$OUT/learner_mid.json" 2>/dev/null
	wait $lc3 2>/dev/null
	sleep 2
	akts log --socket $sock --json -n 500 >"$OUT/learner_log.jsonl"
	akts controller --socket $sock --json >"$OUT/learner_after.json" 2>/dev/null
	verdicts < <(python3 - "$OUT/learner_log.jsonl" "$b3" "$OUT/learner_after.json" "$OUT/learner_mid.json" "$OUT/learner_resumed.json" <<'PY'
import datetime, json, sys
path, b3, after, mid, resumed = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def ts(d):
    return datetime.datetime.strptime(d["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
ds = [json.loads(l) for l in open(path) if l.strip()]
# What ran as the burst began: the last switch applied before it (the operator's, or the learner's back).
before = [d for d in ds if d.get("applied") and isinstance(d.get("proposed"), int) and ts(d) < b3]
at_start = before[-1]["proposed"] if before else None  # None: not even the operator's switch is logged
into = [(ts(d), d) for d in ds if d.get("source") == "learner" and d.get("applied") and d.get("proposed") == 0
        and ts(d) >= b3]
try:
    running = json.load(open(mid))["controller_state"].get("running_policy")
except Exception:
    running = None
print("# slot %s ran as the third burst began" % at_start)
if at_start == 1:
    t, d = into[0] if into else (b3 + 99, {})
    print("# into latency %.2f s after the third burst began: %s" % (t - b3, d.get("why")))
    known = "expected to meet the objective" in (d.get("why") or "")
    print(("ok" if known and t - b3 < 2 else "not") + "\tat the burst after the restart the learner went into latency"
          " within 2 s on what it had learnt (%s)" % (d.get("why") or "no such switch")[:160])
elif at_start == 0 and before[-1].get("source") == "learner":
    # The learner itself moved back to latency in the calm (latency gave batch work as much): it ran latency in the
    # burst, on what it knew.
    d = before[-1]
    print(("ok" if running == "latency" and "expected to meet" in (d.get("why") or "") else "not") +
          "\tthe learner ran latency in the burst after the restart, chosen in the calm on what it knew (%s; mid-burst %s)"
          % ((d.get("why") or "")[:120], running))
else:
    print("not\tthe third burst began on slot %s after %s: the check has nothing to judge" % (at_start, before[-1].get("source") if before else "no switch"))
try:
    st = json.load(open(resumed))["controller_state"]
    lat = st["policies"]["latency"]
    # More evidence than this daemon's learner could have credited itself: it came from the file.
    ok = lat["windows_here"] > st["credited_windows"] + 10
    print(("ok" if ok else "not") + "\tthe learner resumed from what it had learnt: latency known at load %.2g on %.0f"
          " windows when it had credited %d itself" % (st["load"], lat["windows_here"], st["credited_windows"]))
except Exception as e:
    print("not\tthe controller's state after the restart reads (%s)" % e)
try:
    st = json.load(open(after))["controller_state"]
    print(("ok" if st.get("state_error") is None else "not") + "\tits state file loaded without error (%s)"
          % st.get("state_error"))
except Exception as e:
    print("not\tthe controller's state reads (%s)" % e)
PY
)
	kill -TERM $dpid
	wait $dpid
	local rc=$?
	# A state file that fails to load: reported, set aside whole, and the daemon starts all the same.
	echo '{"format": "akts learner state", "version": 3, "objectives": {"x": {"policies": {"latency": {"met": "many"}}}}}' >"$learnt"
	lrn_start "$OUT/learner_daemon3.log"
	local started=0 err=""
	akts status --socket $sock >/dev/null 2>&1 && started=1
	sleep 1
	err=$(akts controller --socket $sock --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["controller_state"].get("state_error"))' 2>&1)
	kill $be 2>/dev/null
	wait $be 2>/dev/null
	kill -TERM $dpid
	wait $dpid
	local rc3=$?
	if ((started && rc3 == 0)) && [[ $err == *"set aside"* && -f $learnt.unreadable ]] &&
		grep -q '"met": "many"' "$learnt.unreadable"; then
		ok "a learner state file that fails to load is reported, set aside whole, and the daemon runs ($err)"
	else
		not_ok "a learner state file that fails to load (started $started, exit $rc3, state_error: $err, aside: $(ls "$learnt".* 2>&1 | head -c 100))"
	fi
	if ((rc == 0)); then ok "the daemon with the learner stops cleanly"; else not_ok "the daemon with the learner stops cleanly (exit $rc; $(tail -n 3 "$OUT/learner_daemon2.log"))"; fi
}
