# Admission (src/admission/, v1.admit, v1.evict) on the live node: for each
# gate that runs here a candidate it refuses, with the evidence and nothing
# changed; a hot-add of a real policy into a free slot while LC and BE work
# run, with zero ejections and no task stranded, and the time from admit to
# active; eviction refused for the running slot and done for an idle one.
ADM_SOCK=/run/akts/admission.sock

adm_policies() { # -> "slot:name ..." of the loaded policies
	akts policies --socket $ADM_SOCK --json | python3 -c '
import json, sys
print(" ".join("%d:%s" % (p["slot"], p["name"]) for p in json.load(sys.stdin)["policies"]))'
}

# The two polled every 0.1 s read the text form, not JSON through python3: a python start is ~0.1 s of CPU
# here, and fair-class work that keeps both CPUs busy holds the LC loop (in SCHED_EXT) past the breaker's
# threshold under any policy (akts.h, Circuit breaker, Limits).
adm_tripped() { # true while the circuit breaker holds its safe slot
	akts status --socket $ADM_SOCK | grep '^breaker .*TRIPPED' >/dev/null
}

adm_selected() { # -> the selected policy's name
	akts status --socket $ADM_SOCK | sed -n 's/^selected *slot [0-9]* (\(.*\))$/\1/p'
}

adm_cpu_ticks() { # pids... -> the sum of their threads' user+system ticks
	local p t sum=0
	for p in "$@"; do
		for t in /proc/"$p"/task/*/stat; do
			[[ -r $t ]] && sum=$((sum + $(awk '{print $14 + $15}' "$t" 2>/dev/null || echo 0)))
		done
	done
	echo $sum
}

t_admission() {
	local cfg=$OUT/admission.json i out rc
	# Gate 3 first (its run needs sched_ext to itself): the same script ./akts admit-test runs in a throwaway guest.
	local cand=/tmp/akts-candidate/throughput.bpf.o
	mkdir -p /tmp/akts-candidate
	cp /akts/bpf/akts_throughput.bpf.o $cand
	cp /akts/bpf/akts_greedy.bpf.o /tmp/akts-candidate/greedy.bpf.o
	if [[ -f $HERE/../admit_dynamic.sh ]]; then
		bash "$HERE/../admit_dynamic.sh" 4 /tmp/akts-candidate $cand /tmp/akts-candidate/greedy.bpf.o >"$OUT/admission_dynamic.txt" 2>&1
		diag "gate 3: $(tr '\n' ' ' <"$OUT/admission_dynamic.txt" | cut -c1-300)"
	else
		not_ok "vm/admit_dynamic.sh is in the guest (pass it with --file)"
	fi
	local g3 g3bad
	g3=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["passed"], r["evidence"]["rescues"], r["evidence"]["breaker_trips"])' /tmp/akts-candidate/throughput.bpf.o.dynamic.json 2>&1)
	g3bad=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["passed"], "; ".join(r["evidence"]["why"]))' /tmp/akts-candidate/greedy.bpf.o.dynamic.json 2>&1)
	if [[ $g3 == True* && $g3bad == False* ]]; then
		ok "gate 3 (a dynamic run under hogs and an LC loop) passes throughput ($g3) and refuses greedy: ${g3bad:6:150}"
	else
		not_ok "gate 3's dynamic run (throughput: $g3; greedy: $g3bad)"
	fi
	cat >"$cfg" <<JSON
{"socket": "$ADM_SOCK", "policies": ["latency"], "initial": "latency", "state_file": "", "audit_log": "$OUT/admission_audit.jsonl",
 "repository": "$OUT/admission_repository", "classes": [{"class": "be", "comm": "stress-ng"}],
 "objective": {"signal": "lc_wait_p99", "max": "100ms"}}
JSON
	akts daemon -c "$cfg" >"$OUT/admission_daemon.log" 2>&1 &
	local d=$!
	for i in $(seq 1 200); do
		[[ -S $ADM_SOCK ]] && akts status --socket $ADM_SOCK >/dev/null 2>&1 && break
		sleep 0.05
	done
	local before
	before=$(adm_policies)
	[[ $before == "0:latency" ]] || not_ok "the daemon starts with latency alone (got: '$before')"

	# Gate 2: the static checks refuse a candidate that would end the scheduler and make its own queue.
	out=$(akts admit /akts/bpf/akts_ejector.bpf.o --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"gate 2 static    REFUSED"*scx_bpf_error_bstr* && "$(adm_policies)" == "$before" ]]; then
		ok "gate 2 refuses ejector: $(grep -m1 kfuncs <<<"$out" | sed 's/^ *//' | cut -c1-160)"
	else
		not_ok "gate 2 refuses ejector (exit $rc): ${out:0:300}"
	fi
	out=$(akts admit /akts/bpf/akts_snooper.bpf.o --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"programs: section tp_btf/sched_switch"* && $out == *send_signal* ]]; then
		ok "gate 2 refuses snooper: a tracepoint program and the send_signal helper"
	else
		not_ok "gate 2 refuses snooper (exit $rc): ${out:0:300}"
	fi

	# Gate 3: no passing dynamic run of this exact object on record.
	mv $cand.dynamic.json $cand.dynamic.json.kept
	out=$(akts admit $cand --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"gate 3 dynamic   REFUSED no gate 3 record"* && "$(adm_policies)" == "$before" ]]; then
		ok "gate 3 refuses an object with no dynamic run on record"
	else
		not_ok "gate 3 refuses an object with no record (exit $rc): ${out:0:300}"
	fi
	echo '{"sha256": "0000000000000000000000000000000000000000000000000000000000000000", "passed": true, "evidence": {}}' >$cand.dynamic.json
	out=$(akts admit $cand --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"is for another object"* ]]; then
		ok "gate 3 refuses a record made for another object (the hash differs)"
	else
		not_ok "gate 3 refuses a record of another object (exit $rc): ${out:0:300}"
	fi
	out=$(akts admit /tmp/akts-candidate/greedy.bpf.o --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"gate 3 dynamic   REFUSED the candidate failed its dynamic run"* && "$(adm_policies)" == "$before" ]]; then
		ok "gate 3 refuses greedy: its own dynamic run failed"
	else
		not_ok "gate 3 refuses greedy on its failed record (exit $rc): ${out:0:300}"
	fi
	mv $cand.dynamic.json.kept $cand.dynamic.json  # the record of its own passing run

	# Gate 4: the kernel's verifier; nothing is left behind, nothing is ejected.
	out=$(akts admit /akts/bpf/akts_unverifiable.bpf.o --force-untested --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"gate 4 verifier  REFUSED"* && "$(adm_policies)" == "$before" &&
		"$(cat /sys/kernel/sched_ext/state)" == enabled ]]; then
		ok "gate 4 (the verifier) refuses unverifiable; nothing changed: $(grep -m1 -A1 'gate 4' <<<"$out" | tail -n1 | sed 's/^ *//' | cut -c1-140)"
	else
		not_ok "gate 4 refuses unverifiable (exit $rc): ${out:0:400}"
	fi

	# Gate 1 where the daemon runs: the guest's clang against the running kernel's BTF and the headers that
	# come beside akts (vm/run.sh's payload, the installed layout); a source that does not compile is refused.
	local src=/tmp/akts-candidate/guestfifo.bpf.c
	cat >$src <<'C'
/* guestfifo - one FIFO, written by t_admission so that gate 1 compiles it in the guest. */
#include "akts_policy.bpf.h"

char _license[] SEC("license") = "GPL";

s32 BPF_STRUCT_OPS(guestfifo_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	akts_count_call(AKTS_CB_SELECT_CPU);
	return prev_cpu;
}

void BPF_STRUCT_OPS(guestfifo_enqueue, struct task_struct *p, u64 enq_flags)
{
	akts_count_call(AKTS_CB_ENQUEUE);
	scx_bpf_dsq_insert(p, AKTS_DSQ_BE_FIFO, 5000000, enq_flags);
	akts_kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(guestfifo_dispatch, s32 cpu, struct task_struct *prev)
{
	akts_count_call(AKTS_CB_DISPATCH);
	if (!akts_drain_leftovers(AKTS_OWN(AKTS_DSQ_BE_FIFO), akts_slot))
		scx_bpf_dsq_move_to_local(AKTS_DSQ_BE_FIFO, 0);
}

AKTS_COUNT_ONLY(guestfifo, runnable)
AKTS_COUNT_ONLY(guestfifo, running)
AKTS_COUNT_ONLY(guestfifo, stopping)
AKTS_COUNT_ONLY(guestfifo, quiescent)

AKTS_POLICY_HOLDER(guestfifo, guestfifo);
C
	out=$(akts admit $src --force-untested --description "one FIFO, compiled in the guest" --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 0)) && [[ $out == *"gate 1 compile   passed"* && "$(adm_policies)" == *":guestfifo"* ]]; then
		ok "gate 1 compiles a source where the daemon runs ($(ls /usr/bin/clang-[0-9]* 2>/dev/null | head -n1)), and it is admitted"
	else
		not_ok "gate 1 in the guest (exit $rc): ${out:0:500}"
	fi
	akts evict guestfifo --socket $ADM_SOCK >/dev/null 2>&1 || not_ok "evicting guestfifo again"
	sed 's/return prev_cpu;/return prev_cpu/' $src >/tmp/akts-candidate/broken.bpf.c
	out=$(akts admit /tmp/akts-candidate/broken.bpf.c --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"gate 1 compile   REFUSED"* && $out == *"expected ';'"* && "$(adm_policies)" == "$before" ]]; then
		ok "gate 1 refuses a source that does not compile, with clang's error; nothing changed"
	else
		not_ok "gate 1 refuses a broken source (exit $rc): ${out:0:400}"
	fi

	# A hot-add while LC and BE work run: no detach, no ejection, no task stranded.
	stress-ng --cpu 2 --timeout 60s -q &
	local hogs=$!
	python3 -c '
import time
while True:
    t = time.time()
    while time.time() - t < 0.002: pass
    time.sleep(0.003)' &
	local lc=$!
	sleep 0.5
	akts classify --socket $ADM_SOCK $lc lc >/dev/null
	sleep 1
	local ops0 t0 t1 t_active
	ops0=$(cat /sys/kernel/sched_ext/enable_seq 2>/dev/null || echo 0)
	t0=$(date +%s%N)
	out=$(akts admit $cand --description "one FIFO, 20 ms slices (hot-added)" --socket $ADM_SOCK --json 2>&1)
	rc=$?
	t1=$(date +%s%N)
	akts switch --socket $ADM_SOCK throughput >/dev/null
	# Active: the dispatcher has run the new slot's programs.
	for i in $(seq 1 100); do
		[[ "$(akts stats --socket $ADM_SOCK --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(sum(c["calls_by_slot"][1] for c in s["callbacks"].values()))' 2>/dev/null || echo 0)" -gt 0 ]] && break
		sleep 0.02
	done
	t_active=$(date +%s%N)
	local ticks0 ticks1
	ticks0=$(adm_cpu_ticks $lc $hogs $(pgrep -P $hogs))
	sleep 2
	ticks1=$(adm_cpu_ticks $lc $hogs $(pgrep -P $hogs))
	local seq1
	seq1=$(cat /sys/kernel/sched_ext/enable_seq 2>/dev/null || echo 0)
	local admitted slot
	admitted=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r.get("admitted"), r.get("slot"), round(r.get("took_ms", 0)))' "$out" 2>/dev/null)
	if ((rc == 0)) && [[ $admitted == "True 1 "* && "$(adm_policies)" == "0:latency 1:throughput" &&
		"$(cat /sys/kernel/sched_ext/state)" == enabled && $seq1 == "$ops0" ]] && ((ticks1 > ticks0)) &&
		kill -0 $lc && kill -0 $hogs; then
		ok "hot-add: throughput admitted on its gate 3 record into slot 1 in $(cut -d' ' -f3 <<<"$admitted") ms (gates 2-4; $(((t1 - t0) / 1000000)) ms for the command), active $(((t_active - t0) / 1000000)) ms after admit began; the scheduler was never re-enabled (enable_seq $seq1), LC and BE work ran on (+$((ticks1 - ticks0)) ticks)"
	else
		not_ok "hot-add (exit $rc, admitted: $admitted, policies: $(adm_policies), state $(cat /sys/kernel/sched_ext/state), enable_seq $ops0 -> $seq1, ticks $ticks0 -> $ticks1): ${out:0:300}"
	fi
	diag "t_admit_to_active_ms $(((t_active - t0) / 1000000))"
	local rec
	rec=$(akts repo show throughput --dir "$OUT/admission_repository" --json 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["origin"], len(r["object_sha256"]))' 2>/dev/null)
	if [[ $rec == "admitted 64" ]]; then
		ok "the policy repository records it: origin admitted, the object's SHA-256"
	else
		not_ok "the repository records the admitted policy (got: $rec)"
	fi

	# Eviction: never the running slot; an idle one goes, and a switch to it afterwards is inert.
	out=$(akts evict throughput --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 2)) && [[ $out == *selected* ]]; then
		ok "evicting the selected policy is refused: ${out:0:120}"
	else
		not_ok "evicting the selected policy is refused (exit $rc): $out"
	fi
	akts switch --socket $ADM_SOCK latency >/dev/null
	out=$(akts evict throughput --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 0)) && [[ "$(adm_policies)" == "0:latency" && "$(cat /sys/kernel/sched_ext/state)" == enabled ]] &&
		kill -0 $lc && kill -0 $hogs; then
		ok "an idle policy is evicted while the scheduler runs: $out"
	else
		not_ok "evict an idle policy (exit $rc, policies $(adm_policies)): $out"
	fi

	# Gate 5, the canary: a policy that starves LC work is reverted and evicted; a fair one stays.
	local t_canary
	t_canary=$(date +%s%N)
	out=$(akts admit /akts/bpf/akts_lc_starver.bpf.o --force-untested --canary 8s --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 1)) && [[ $out == *"gate 5 canary    REFUSED"* && "$(adm_policies)" == "0:latency" &&
		"$(cat /sys/kernel/sched_ext/state)" == enabled ]] && kill -0 $lc && kill -0 $hogs; then
		ok "gate 5 reverts lc_starver within $((($(date +%s%N) - t_canary) / 1000000)) ms: $(grep 'gate 5 canary    REFUSED' <<<"$out" | cut -c1-200)"
	else
		not_ok "gate 5 reverts lc_starver (exit $rc, policies $(adm_policies)): ${out:0:400}"
	fi
	kill $hogs 2>/dev/null
	wait $hogs 2>/dev/null
	sleep 6 # the breaker's cool-down after the trip, if it tripped
	out=$(akts admit $cand --force-untested --canary 3s --socket $ADM_SOCK 2>&1)
	rc=$?
	if ((rc == 0)) && [[ $out == *"gate 5 canary    passed"* && "$(adm_policies)" == "0:latency 1:throughput" &&
		"$(akts status --socket $ADM_SOCK --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["selected"]["policy"])')" == throughput ]]; then
		ok "gate 5 keeps a policy that does not degrade: $(grep 'gate 5 canary    passed' <<<"$out" | cut -c1-160); it stays selected"
	else
		not_ok "gate 5 keeps throughput (exit $rc, policies $(adm_policies)): ${out:0:400}"
	fi

	# Replacing a slot's policy: never the selected one; a failure halfway puts the old programs back.
	out=$(akts admit /akts/bpf/akts_hoarder.bpf.o --slot 1 --replace --force-untested --socket $ADM_SOCK 2>&1)
	rc=$?
	local refused_selected=$rc
	akts switch --socket $ADM_SOCK latency >/dev/null
	out=$(akts admit /akts/bpf/akts_hoarder.bpf.o --slot 1 --replace --force-untested --socket $ADM_SOCK 2>&1)
	rc=$?
	local after_replace
	after_replace=$(adm_policies)
	out=$(akts admit /akts/bpf/akts_misfit.bpf.o --slot 1 --replace --force-untested --socket $ADM_SOCK 2>&1)
	local misfit_rc=$?
	local calls1_before calls1_after
	calls1_before=$(akts stats --socket $ADM_SOCK --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(sum(c["calls_by_slot"][1] for c in s["callbacks"].values()))')
	akts switch --socket $ADM_SOCK hoarder >/dev/null
	sleep 0.5
	calls1_after=$(akts stats --socket $ADM_SOCK --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(sum(c["calls_by_slot"][1] for c in s["callbacks"].values()))')
	akts switch --socket $ADM_SOCK latency >/dev/null
	if ((refused_selected == 1 && rc == 0 && misfit_rc == 1)) && [[ $after_replace == "0:latency 1:hoarder" &&
		"$(adm_policies)" == "0:latency 1:hoarder" && "$(cat /sys/kernel/sched_ext/state)" == enabled ]] &&
		((calls1_after > calls1_before)); then
		ok "replace: refused for the selected slot; throughput replaced by hoarder in slot 1; misfit refused halfway and hoarder's programs put back (slot 1 dispatched +$((calls1_after - calls1_before)) calls after)"
	else
		not_ok "replace (selected: exit $refused_selected; replace: exit $rc -> $after_replace; misfit: exit $misfit_rc -> $(adm_policies); slot 1 calls $calls1_before -> $calls1_after): ${out:0:300}"
	fi
	# An operator who ends a canary's hold and switches away: their selection stands, the canary fails
	# without a revert, and the unproven policy is evicted. A canary cannot start while a trip holds the safe
	# slot (hoarder above may have tripped the breaker): wait for its release.
	local adm attempt
	for attempt in 1 2 3; do # a trip that begins just as the canary starts refuses it: try again after its release
		for i in $(seq 1 150); do
			adm_tripped || break
			sleep 0.1
		done
		akts admit $cand --force-untested --canary 30s --socket $ADM_SOCK >"$OUT/admission_interrupted.txt" 2>&1 &
		adm=$!
		for i in $(seq 1 150); do
			[[ "$(adm_selected)" == throughput ]] && break
			kill -0 $adm 2>/dev/null || break
			sleep 0.1
		done
		[[ "$(adm_selected)" == throughput ]] && break
		wait $adm
		grep -q "holds its safe slot" "$OUT/admission_interrupted.txt" || break
		diag "the canary met a trip's cool-down (attempt $attempt): again"
	done
	sleep 0.5
	akts release --socket $ADM_SOCK >/dev/null
	akts switch --socket $ADM_SOCK latency >/dev/null
	wait $adm
	rc=$?
	out=$(cat "$OUT/admission_interrupted.txt")
	if ((rc == 1)) && [[ $out == *"gate 5 canary    REFUSED an operator selected slot 0"* && "$(adm_selected)" == latency &&
		"$(adm_policies)" == "0:latency 1:hoarder" ]]; then
		ok "an operator's switch during a canary stands: the canary failed without a revert, the policy went"
	else
		not_ok "operator during a canary (exit $rc, selected $(adm_selected), policies $(adm_policies)): $(grep -m1 'gate 5' <<<"$out")"
	fi
	kill $lc 2>/dev/null
	wait $lc 2>/dev/null
	kill -INT $d
	wait $d
	rc=$?
	if ((rc == 0)) && ! grep -q "ejected" "$OUT/admission_daemon.log"; then
		ok "the daemon stopped cleanly, no ejection through the whole test"
	else
		not_ok "clean stop without ejection (exit $rc): $(grep -m2 -i 'eject\|error' "$OUT/admission_daemon.log")"
	fi
}
