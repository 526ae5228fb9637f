# Classification by the kernel's process events: with the safety-net rescan
# pushed out of reach, a new process, an exec into another name and an exit
# are each handled by events alone; and a smoke run of the classification
# benchmark (both modes, 100 processes) whose every probe gets its class.
t_classify() {
	local sock=/run/akts/classify.sock cfg=/tmp/akts-classify.json log=$OUT/classify_daemon.log
	cat >"$cfg" <<JSON
{"socket": "$sock", "audit_log": "", "state_file": "", "process_events": true, "rescan_interval_ms": 600000,
 "classes": [{"class": "lc", "comm": "cls-server"}, {"class": "be", "comm": "cls-batch"}]}
JSON
	cp /bin/sleep /tmp/cls-server
	cp /bin/sleep /tmp/cls-batch
	akts daemon -c "$cfg" >"$log" 2>&1 &
	local dpid=$! i
	for i in $(seq 1 100); do [[ -S $sock ]] && akts status --socket $sock >/dev/null 2>&1 && break; sleep 0.1; done
	sleep 1  # the first scan is done: from here on only events can change anything
	class_of() { # pid -> "lc", "be" or "none"
		akts classify --socket $sock "$1" --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["kernel_class"] if r["kernel_entry"] else "none")'
	}
	wait_class() { # pid class -> waits up to 3 s
		for i in $(seq 1 60); do [[ $(class_of "$1") == "$2" ]] && return 0; sleep 0.05; done
		return 1
	}
	/tmp/cls-server 60 &
	local srv=$!
	wait_class $srv lc && ok "a new process gets its class from its exec event (no scan due for 10 min)" ||
		not_ok "a new process gets its class from its exec event: $(class_of $srv)"
	# A process that execs into another name: sh (no rule) becomes cls-batch.
	rm -f /tmp/cls-go
	bash -c 'while [ ! -e /tmp/cls-go ]; do sleep 0.05; done; exec /tmp/cls-batch 60' &
	local b=$!
	sleep 0.3
	[[ $(class_of $b) == none ]] && ok "before its exec, no rule names the shell" || not_ok "before its exec, no rule names the shell: $(class_of $b)"
	touch /tmp/cls-go
	wait_class $b be && ok "its exec into cls-batch brings its class (BE)" || not_ok "its exec into cls-batch brings its class: $(class_of $b)"
	local before
	before=$(akts stats --socket $sock --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["managed"]["lc"])')
	kill $srv
	wait $srv 2>/dev/null
	local after=$before
	for i in $(seq 1 60); do
		after=$(akts stats --socket $sock --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["managed"]["lc"])')
		((after < before)) && break
		sleep 0.05
	done
	((after < before)) && ok "an exit releases its process by its event ($before -> $after LC)" ||
		not_ok "an exit releases its process by its event ($before -> $after LC)"
	[[ $(class_of $srv) == none ]] && ok "the exited process's kernel entry is gone" || not_ok "the exited process's kernel entry is gone: $(class_of $srv)"
	local mode
	mode=$(akts stats --socket $sock --json | python3 -c 'import json,sys; t=json.load(sys.stdin)["tracker"]; print(t["mode"], t["scans"], t["events"])')
	[[ $mode == "events 1 "* ]] && ok "all of it by events, after the one scan at start: $mode" || not_ok "all of it by events, after the one scan at start (mode, scans, events): $mode"
	kill $b 2>/dev/null
	wait $b 2>/dev/null
	kill -TERM $dpid
	wait $dpid

	# The benchmark's smoke run: both modes, every probe classified.
	python3 "$HERE/../classify_bench.py" "$OUT/classify" --counts 100 --probes 5 --idle 2 >"$OUT/classify_bench.txt" 2>&1
	local rc=$?
	verdicts < <(python3 - "$OUT/classify/classify.json" "$rc" <<'PY'

import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(("ok" if sys.argv[2] == "0" else "not") + "\tthe classification benchmark's smoke run exits 0 (exit " + sys.argv[2] + ")")
    for x in r["results"]:
        e = x.get("exec_to_class_ms", {})
        good = "error" not in x and e.get("unclassified_after_30s") == 0 and x.get("tracker_mode") == x["mode"]
        print(("ok" if good else "not") + f"\t{x['mode']}: every probe classified, the tracker in that mode: {json.dumps(x)[:220]}")
except Exception as ex:
    print(f"not\tthe classification benchmark's report cannot be read: {ex!r}")
PY
)
}
