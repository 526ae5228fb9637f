# Live parameters (bpf/akts.h, Parameters; v1.params, v1.set, akts params/set): the values in force are listed
# with their ranges; bad values are refused and change nothing; a new slice takes effect while the policy runs
# (two CPU hogs sharing one CPU switch about once a slice), and the change is in the decision log; BPF clamps
# a word written around the daemon; a replacement that fails halfway puts the slot's values back.
PRM_SOCK=/run/akts/params.sock

prm_value() { # POLICY PARAM -> the value in force (ns for a duration)
	akts params "$1" --socket $PRM_SOCK --json | python3 -c '
import json, sys
p = json.load(sys.stdin)["policies"][0]
print(next(q["value"] for q in p["params"] if q["name"] == sys.argv[1]))' "$2"
}

prm_slot1_calls() { # -> the calls slot 1's programs took so far
	akts stats --socket $PRM_SOCK --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(sum(c["calls_by_slot"][1] for c in s["callbacks"].values()))'
}

prm_switches() { # pids... -> the sum of their threads' involuntary context switches
	local p sum=0 n
	for p in "$@"; do
		n=$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)
		sum=$((sum + ${n:-0}))
	done
	echo $sum
}

t_params() {
	local cfg=$OUT/params.json out rc
	cat >"$cfg" <<JSON
{"socket": "$PRM_SOCK", "policies": ["latency", "throughput"], "initial": "throughput", "state_file": "",
 "audit_log": "$OUT/params_audit.jsonl", "repository": ""}
JSON
	akts daemon -c "$cfg" >"$OUT/params_daemon.log" 2>&1 &
	local d=$!
	for i in $(seq 1 200); do
		[[ -S $PRM_SOCK ]] && akts status --socket $PRM_SOCK >/dev/null 2>&1 && break
		sleep 0.05
	done
	out=$(akts params --socket $PRM_SOCK 2>&1)
	if [[ $out == *"slot 1 throughput"* && $out == *slice*20ms*"duration 100000 .. 100000000 (default 20000000)"* &&
		$(prm_value latency slice) == 1000000 ]]; then
		ok "akts params lists each policy's live parameters with type, range, default and the value in force"
	else
		not_ok "akts params: $out"
	fi

	# Refused, exit 2, the value unchanged, for every malformed or out-of-range value.
	local bad=0 v
	for v in 50us 1s fast "" -1 0.3 "5 ms" 5ms\;reboot; do
		akts set throughput.slice "$v" --socket $PRM_SOCK >/dev/null 2>&1
		rc=$?
		((rc == 2)) || { bad=1; diag "akts set throughput.slice '$v' exited $rc"; }
	done
	local tg
	for tg in throughput.nosuch nosuch.slice throughput latency.slice.x; do
		akts set "$tg" 5ms --socket $PRM_SOCK >/dev/null 2>&1
		rc=$?
		((rc == 2)) || { bad=1; diag "akts set '$tg' 5ms exited $rc"; }
	done
	out=$(akts set throughput.slice 50us --socket $PRM_SOCK 2>&1)
	if ((bad == 0)) && [[ $(prm_value throughput slice) == 20000000 && $out == *"100us to 100ms"* ]]; then
		ok "bad values and targets are refused (exit 2) and change nothing: $out"
	else
		not_ok "bad parameter changes refused (value now $(prm_value throughput slice)): $out"
	fi

	# The effect while throughput runs: two hogs on CPU 1 switch about once per slice.
	pol_hogs $PRM_SOCK # t_policies.sh
	local h1=$POL_H1 h2=$POL_H2
	sleep 1
	local rate=() s0 s1 slice
	for slice in 50ms 5ms 50ms; do
		akts set throughput.slice $slice --socket $PRM_SOCK >/dev/null || not_ok "akts set throughput.slice $slice"
		sleep 0.5
		s0=$(prm_switches $h1 $h2)
		sleep 3
		s1=$(prm_switches $h1 $h2)
		rate+=($(((s1 - s0) / 3)))
	done

	# BPF clamps again: a word written around the daemon (bpf_raw.py, the bpf syscall) past the range acts
	# as the range's end. Raw 10 s is 100 ms in force: each hog waits about one slice, below the guard's
	# 200 ms bound, so the guard rescues none; unclamped, the waiting hog would be rescued every 200 ms.
	# (Unclamped: about 13 rescues in 3 s. The readers run on CPU 0, away from the hogs.)
	local old r0 r1 shown
	old=$(taskset -c 0 python3 "$HERE/bpf_raw.py" akts_params 1 0 10000000000)
	sleep 0.5
	r0=$(taskset -c 0 akts stats --socket $PRM_SOCK --json | taskset -c 0 python3 -c 'import json,sys; print(json.load(sys.stdin)["guard"]["classes"]["be"]["rescues"])')
	sleep 3
	r1=$(taskset -c 0 akts stats --socket $PRM_SOCK --json | taskset -c 0 python3 -c 'import json,sys; print(json.load(sys.stdin)["guard"]["classes"]["be"]["rescues"])')
	shown=$(akts params throughput --socket $PRM_SOCK --json | python3 -c '
import json, sys
q = json.load(sys.stdin)["policies"][0]["params"][0]
print(q["value"], q.get("raw"))')
	if [[ $old == 50000000 && $shown == "100000000 10000000000" && $r0 =~ ^[0-9]+$ && $r1 =~ ^[0-9]+$ ]] &&
		((r1 - r0 <= 3)); then
		ok "BPF clamps a raw out-of-range word: 10 s written around the daemon acts as 100 ms ($((r1 - r0)) BE rescues in 3 s; akts params shows the value in force and the raw word)"
	else
		not_ok "BPF clamps a raw word (old $old; value and raw shown: $shown; BE rescues from '$r0' to '$r1' in 3 s)"
	fi

	# A replacement that fails halfway puts back the slot's parameter values with its programs.
	akts set throughput.slice 7ms --socket $PRM_SOCK >/dev/null
	akts switch latency --socket $PRM_SOCK >/dev/null
	out=$(akts admit /akts/bpf/akts_misfit.bpf.o --slot 1 --replace --force-untested --socket $PRM_SOCK 2>&1)
	rc=$?
	local c0 c1
	c0=$(prm_slot1_calls)
	akts switch throughput --socket $PRM_SOCK >/dev/null
	sleep 0.5
	c1=$(prm_slot1_calls)
	if ((rc == 1)) && [[ $out == *"gate 4 verifier  REFUSED"* && $(prm_value throughput slice) == 7000000 &&
		$c0 =~ ^[0-9]+$ && $c1 =~ ^[0-9]+$ ]] && ((c1 > c0)); then
		ok "a failed replacement of throughput keeps its slice (7ms) and its programs (slot 1 dispatched +$((c1 - c0)) calls after): $(grep -m1 REFUSED <<<"$out" | cut -c1-120)"
	else
		not_ok "a failed replacement keeps the slot's values (exit $rc, slice $(prm_value throughput slice), slot 1 calls '$c0' -> '$c1'): ${out:0:300}"
	fi

	kill $h1 $h2 2>/dev/null
	wait $h1 $h2 2>/dev/null
	diag "t_param_switches_per_s 50ms=${rate[0]} 5ms=${rate[1]} 50ms=${rate[2]}"
	if ((rate[1] > 2 * rate[0] && rate[1] > 2 * rate[2])); then
		ok "a live slice change takes effect while the policy runs: the hogs switched ${rate[0]}/s at 50ms, ${rate[1]}/s at 5ms, ${rate[2]}/s at 50ms again (TCG)"
	else
		not_ok "the slice took effect (switches/s at 50ms, 5ms, 50ms: ${rate[*]})"
	fi
	if akts log --socket $PRM_SOCK --json -n 50 | grep '"throughput.slice: 5ms -> 50ms"' >/dev/null &&
		grep -q '"v1.set"' "$OUT/params_audit.jsonl"; then
		ok "each change is in the decision log and the audit log"
	else
		not_ok "the change is logged: $(akts log --socket $PRM_SOCK -n 5 2>&1 | tail -n 3)"
	fi
	kill -INT $d
	wait $d
	rc=$?
	((rc == 0)) && ok "the daemon stopped cleanly" || not_ok "the daemon stopped cleanly (exit $rc)"
}
