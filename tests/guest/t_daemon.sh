# The daemon end to end: config checking, every matcher kind, akts run, the
# socket and the CLI, counters following a switch, bad input, a clean stop.
SOCK=/run/akts/akts.sock
RPC="python3 $HERE/rpc.py $SOCK"

check() { # check DESCRIPTION COMMAND... : ok when the command succeeds
	local what="$1"
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}

managed_reason() { # pid -> reason, "" when not managed
	akts status --json | python3 -c '
import json, sys
for m in json.load(sys.stdin)["managed_processes"]:
    if m["pid"] == int(sys.argv[1]): print(m["class"], m["reason"])' "$1"
}

wait_managed() { # pid -> waits up to 3 s for it to be managed
	local i
	for i in $(seq 1 60); do
		[[ -n "$(managed_reason "$1")" ]] && return 0
		sleep 0.05
	done
	return 1
}

kernel_class() { # pid -> the class in the kernel's map ("lc", "be", or "none" without an entry)
	akts classify "$1" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["kernel_class"] if r["kernel_entry"] else "none")'
}

thread_policies() { # pid -> "tid POLICY" per thread
	local t
	for t in /proc/"$1"/task/*; do
		echo "${t##*/} $(chrt -p "${t##*/}" | head -n1 | awk '{print $NF}')"
	done
}

refused_as_bad_input() { # RC OUTPUT MESSAGE: exit 2 (bad input, nothing changed) with MESSAGE in OUTPUT
	[[ $1 -eq 2 && $2 == *"$3"* ]]
}

rpc_error_code() { # raw request -> error code or "none"
	$RPC "$1" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
r = r[0] if isinstance(r, list) else r  # a batch answers with a list
print(r.get("error", {}).get("code", "none"))'
}

t_daemon() {
	local cfg=/tmp/akts-test.json bad=/tmp/akts-bad.json
	# --check-config: a bad file is refused with the key named, a good one is summarised.
	echo '{"classes": [{"class": "rt", "comm": "x"}]}' >"$bad"
	local out rc
	out=$(akts daemon --check-config -c "$bad" 2>&1)
	rc=$?
	check "check-config refuses class rt (exit $rc): ${out:0:120}" \
		refused_as_bad_input $rc "$out" 'config: classes[0]: "class" must be "lc" or "be", not "rt"'
	echo '{"polices": []}' >"$bad"
	out=$(akts daemon --check-config -c "$bad" 2>&1)
	rc=$?
	check "check-config refuses an unknown key (exit $rc): ${out:0:120}" \
		refused_as_bad_input $rc "$out" 'config: polices: unknown key'
	out=$(akts daemon -c "$bad" 2>&1)
	rc=$?
	check "daemon refuses a bad config at start (exit $rc): ${out:0:120}" \
		refused_as_bad_input $rc "$out" 'config: polices: unknown key'
	check "no scheduler attached after the refusals" test "$(cat /sys/kernel/sched_ext/state)" = disabled

	# A process for each matcher kind, started before the daemon.
	sleep 300 &
	local pid_proc=$!
	mkdir -p /sys/fs/cgroup/serving
	cp /bin/sleep /tmp/lcwork
	rm -rf /tmp/akts-audit
	# A group given the socket (the image's groupadd; Debian's "daemon" group if it has none).
	local grp=aktsgrp
	groupadd -f aktsgrp 2>/dev/null
	getent group aktsgrp >/dev/null || grp=daemon
	cat >"$cfg" <<JSON
{"initial": "throughput", "audit_log": "/tmp/akts-audit/audit.jsonl",
 "socket_mode": "0660", "socket_group": "$grp",
 "classes": [{"class": "lc", "pid": $pid_proc}, {"class": "lc", "cgroup": "/serving"},
             {"class": "lc", "comm": "lcwork"}, {"class": "be", "comm": "stress-ng"},
             {"class": "lc", "comm": "mtwork"}]}
JSON
	check "check-config accepts the test config" akts daemon --check-config -c "$cfg"
	akts daemon -c "$cfg" >"$OUT/daemon.log" 2>&1 &
	local dpid=$!
	local i
	for i in $(seq 1 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
	check "daemon attached and listening" test "$(cat /sys/kernel/sched_ext/root/ops)" = akts -a -S $SOCK
	check "socket mode is socket_mode's 0660 (socket_group is set)" test "$(stat -c %a $SOCK)" = 660
	check "a second daemon refuses to start" bash -c "! akts daemon --socket /run/akts/other.sock 2>/dev/null"

	/tmp/lcwork 300 &
	local comm_proc=$!
	sleep 300 &
	local cg_proc=$! # matched by its cgroup alone, once moved there below
	# A multithreaded process with a real-time thread: every normal thread moves, the
	# SCHED_FIFO one is left alone, and each gets its own policy back on release.
	python3 -c '
import ctypes, os, threading, time
ctypes.CDLL(None).prctl(15, b"mtwork")
def rt():
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    open("/tmp/mt.rt", "w").write(str(threading.get_native_id()))
    time.sleep(300)
def batch():
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    open("/tmp/mt.batch", "w").write(str(threading.get_native_id()))
    time.sleep(300)
threading.Thread(target=rt, daemon=True).start()
threading.Thread(target=batch, daemon=True).start()
threading.Thread(target=time.sleep, args=(300,), daemon=True).start()
time.sleep(300)' &
	local mt_proc=$!
	for i in $(seq 1 50); do [[ -s /tmp/mt.rt && -s /tmp/mt.batch ]] && break; sleep 0.1; done
	local rt_tid batch_tid
	rt_tid=$(cat /tmp/mt.rt)
	batch_tid=$(cat /tmp/mt.batch)
	wait_managed $mt_proc
	sleep 0.3
	thread_policies $mt_proc >"$OUT/mt_threads_managed.txt"
	check "every normal thread of a matched process is in SCHED_EXT ($(grep -c SCHED_EXT "$OUT/mt_threads_managed.txt") of $(wc -l <"$OUT/mt_threads_managed.txt"))" \
		test "$(grep -vc -e SCHED_EXT -e "^$rt_tid " "$OUT/mt_threads_managed.txt")" -eq 0
	check "its SCHED_FIFO thread was left alone" grep -q "^$rt_tid SCHED_FIFO" "$OUT/mt_threads_managed.txt"
	check "the kernel's map holds the class the daemon decided: $(kernel_class $mt_proc)" test "$(kernel_class $mt_proc)" = lc
	echo $cg_proc >/sys/fs/cgroup/serving/cgroup.procs
	stress-ng --cpu 2 --timeout 60 --temp-path /tmp -q &
	local be_proc=$!
	wait_managed $pid_proc; wait_managed $comm_proc; wait_managed $cg_proc; wait_managed $be_proc
	check "pid matcher: $(managed_reason $pid_proc)" test "$(managed_reason $pid_proc)" = "lc pid $pid_proc"
	check "comm matcher: $(managed_reason $comm_proc)" test "$(managed_reason $comm_proc)" = "lc comm lcwork"
	check "cgroup matcher: $(managed_reason $cg_proc)" test "$(managed_reason $cg_proc)" = "lc cgroup /serving"
	check "be comm matcher: $(managed_reason $be_proc)" test "$(managed_reason $be_proc)" = "be comm stress-ng"
	check "matched processes moved into SCHED_EXT" bash -c "chrt -p $comm_proc | grep -q SCHED_EXT"
	local child
	for i in $(seq 1 50); do
		child=$(pgrep -P $be_proc | head -n1)
		[[ -n $child ]] && break
		sleep 0.1
	done
	wait_managed "$child"
	check "children inherit: $(managed_reason "$child")" test "$(managed_reason "$child")" = "be inherited from $be_proc"
	check "the kernel's map agrees for the child: $(kernel_class "$child")" test "$(kernel_class "$child")" = be
	check "akts classify PID shows the kernel's class: $(akts classify $comm_proc | head -c 120)" \
		bash -c "akts classify $comm_proc | grep -q 'as lc; the daemon holds lc (comm lcwork)'"

	# akts run: explicit beats every matcher (its comm would say be).
	cp /bin/sleep /tmp/stress-ng
	akts run --class lc -- /tmp/stress-ng 10 &
	local run_proc=$!
	wait_managed $run_proc
	local run_reason
	run_reason=$(managed_reason $run_proc) # read once: the message and the check see the same answer
	check "akts run --class lc is explicit: $run_reason" test "$run_reason" = "lc explicit"
	kill $run_proc 2>/dev/null
	wait $run_proc

	# Switching through the CLI and the raw socket; counters follow the slot.
	check "switch by name (CLI)" akts switch latency
	akts stats -i 1s -n 1 --json >"$OUT/stats_latency.json"
	check "after switching to latency every call reached slot 0" python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); cb=d["callbacks"]
tot=sum(c["entries"] for c in cb.values()); s0=sum(c["calls_by_slot"][0] for c in cb.values())
sys.exit(0 if tot > 0 and tot == s0 else 1)' "$OUT/stats_latency.json"
	out=$($RPC '{"jsonrpc":"2.0","id":9,"method":"v1.switch","params":{"target":1}}')
	check "switch by index (socket): $out" grep -q '"selected":1' <<<"$out"
	akts switch nosuch >/dev/null 2>&1
	# The audit log: both accepted switches with the caller's uid and pid, not the refused one.
	check "the audit log holds each accepted switch with its caller, not the refused one" python3 -c '
import json, sys
lines = [json.loads(l) for l in open("/tmp/akts-audit/audit.jsonl")]
sw = [l for l in lines if l["method"] == "v1.switch"]
targets = [l["params"].get("target") for l in sw]
ok = targets[-2:] == ["latency", 1] and all(l["uid"] == 0 and l["pid"] > 1 for l in sw) and "nosuch" not in targets
print(targets, [(l["uid"], l["pid"]) for l in sw], file=sys.stderr)
sys.exit(0 if ok else 1)'
	# A reset of the longest waits is a change (audited, without the figures); a plain reading is not.
	akts stats --json >/dev/null
	akts stats --reset-longest --json >/dev/null
	check "the audit log holds the reset of the longest waits, not the plain reading" python3 -c '
import json, sys
st = [l for l in (json.loads(x) for x in open("/tmp/akts-audit/audit.jsonl")) if l["method"] == "v1.stats"]
sys.exit(0 if len(st) == 1 and st[0]["params"] == {"reset_longest": True} else 1)'
	check "the socket belongs to socket_group ($grp), mode 0660" test \
		"$(stat -c '%G %a' /run/akts/akts.sock 2>/dev/null)" = "$grp 660"
	akts stats -i 1s -n 1 --json >"$OUT/stats_throughput.json"
	check "after switching to throughput every call reached slot 1" python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); cb=d["callbacks"]
tot=sum(c["entries"] for c in cb.values()); s1=sum(c["calls_by_slot"][1] for c in cb.values())
sys.exit(0 if tot > 0 and tot == s1 else 1)' "$OUT/stats_throughput.json"

	# Bad input: a clear error, a non-zero exit, and the selection unchanged.
	local arg
	for arg in 0.3 -1 abc 99 5 "" 4294967296 " 1"; do
		out=$(akts switch -- "$arg" 2>&1)
		local rc=$?
		check "switch '$arg' refused (exit $rc): ${out:0:100}" test $rc -eq 2
	done
	check "selection unchanged by the refusals" bash -c "akts status --json | grep -A1 '\"selected\"' | grep -q '\"policy\": \"throughput\"'"
	check "malformed JSON -> -32700" test "$(rpc_error_code '{"jsonrpc":')" = -32700
	check "not an object -> -32600" test "$(rpc_error_code '42')" = -32600
	check "batch of garbage -> -32600" test "$(rpc_error_code '[1]')" = -32600
	check "unknown method -> -32601" test "$(rpc_error_code '{"jsonrpc":"2.0","id":1,"method":"v1.reboot"}')" = -32601
	check "wrong type -> -32602" test "$(rpc_error_code '{"jsonrpc":"2.0","id":1,"method":"v1.switch","params":{"target":[0]}}')" = -32602
	check "agent answer 0.3 -> -32602" test "$(rpc_error_code '{"jsonrpc":"2.0","id":1,"method":"v1.switch","params":{"target":0.3}}')" = -32602
	check "positional params -> -32602" test "$(rpc_error_code '{"jsonrpc":"2.0","id":1,"method":"v1.switch","params":[0]}')" = -32602
	out=$(python3 $HERE/rpc.py $SOCK --size 100000)
	check "oversized request -> -32600: ${out:0:100}" grep -q -- '-32600' <<<"$out"
	check "daemon still serving after bad input" akts status
	check "selection still throughput" bash -c "akts status | grep -q 'selected    slot 1 (throughput)'"
	out=$(akts switch 5 --force)
	check "--force selects an empty slot: ${out}" grep -q "built-in default" <<<"$out"
	akts stats -i 1s -n 1 --json >"$OUT/stats_forced.json"
	check "empty slot: every call fell through" python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); cb=d["callbacks"]
tot=sum(c["entries"] for c in cb.values()); ft=sum(c["fallthrough"] for c in cb.values())
sys.exit(0 if tot > 0 and tot == ft else 1)' "$OUT/stats_forced.json"

	# A clean stop gives every process back.
	kill -TERM $dpid
	wait $dpid
	local drc=$?
	check "daemon exited 0 on SIGTERM" test $drc -eq 0
	check "scheduler detached" test "$(cat /sys/kernel/sched_ext/state)" = disabled
	check "socket removed" test ! -e $SOCK
	check "managed process back in SCHED_OTHER" bash -c "chrt -p $comm_proc | grep -q SCHED_OTHER"
	thread_policies $mt_proc >"$OUT/mt_threads_released.txt"
	check "every thread got its own policy back (FIFO, BATCH, OTHER): $(awk '{print $2}' "$OUT/mt_threads_released.txt" | sort | uniq -c | tr '\n' ' ')" \
		bash -c "grep -q '^$rt_tid SCHED_FIFO' $OUT/mt_threads_released.txt && grep -q '^$batch_tid SCHED_BATCH' $OUT/mt_threads_released.txt && ! grep -q SCHED_EXT $OUT/mt_threads_released.txt"
	check "no daemon: a clear error, exit 3" bash -c "akts status 2>&1 | grep -q 'no akts daemon'; test \${PIPESTATUS[0]} -eq 3"
	kill $pid_proc $comm_proc $cg_proc $be_proc $mt_proc 2>/dev/null
	wait $pid_proc $comm_proc $cg_proc $be_proc $mt_proc 2>/dev/null
}
