# The daemon's metrics, judged by Prometheus's own promtool (`check metrics`)
# and the Prometheus Python client's strict OpenMetrics parser, both from
# Debian (vm/fetch_checkers.sh, copied in as /akts/bin/checkers): `akts stats
# --prometheus`, /metrics in both formats, values that follow a switch, a scrape
# beside idle connections, and a bad or taken address that changes nothing.
CHECKERS=/akts/bin/checkers

metrics_checks() { # metrics_checks URL SOCKET : reads the exposition and prints ok/not lines
	python3 - "$1" "$2" <<'PY'
import json, subprocess, sys, urllib.request
sys.path.insert(0, "/akts/bin/checkers/python")
url, sock = sys.argv[1], sys.argv[2]
def say(good, what):
    print(("ok" if good else "not") + "\t" + what.replace("\n", " ")[:300])
def get(accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=20) as r:
        return r.headers.get("Content-Type"), r.read().decode()
def promtool(text):
    p = subprocess.run(["/akts/bin/checkers/promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()
try:
    cli = subprocess.run(["akts", "stats", "--prometheus", "--socket", sock], capture_output=True, text=True, timeout=20)
    rc, out = promtool(cli.stdout)
    say(cli.returncode == 0 and rc == 0 and "akts_switches_total" in cli.stdout,
        f"promtool check metrics passes akts stats --prometheus (exit {cli.returncode}, promtool {rc}: {out or 'clean'})")
    ctype, text = get()
    rc, out = promtool(text)
    say(ctype.startswith("text/plain; version=0.0.4") and rc == 0,
        f"promtool check metrics passes /metrics as {ctype} ({len(text.splitlines())} lines; promtool {rc}: {out or 'clean'})")
    from prometheus_client.parser import text_string_to_metric_families as prom_parse
    fams = {f.name: f for f in prom_parse(text)}
    ctype, om = get("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
    try:
        om_fams = {f.name: f for f in om_parse(om)}
        say(ctype.startswith("application/openmetrics-text; version=1.0.0") and om.endswith("# EOF\n"),
            f"OpenMetrics when the Accept header asks for it ({ctype}; the client's strict parser read {len(om_fams)} families)")
    except Exception as e:
        say(False, f"the OpenMetrics parser refuses /metrics: {e!r}")
        om_fams = {}
    def val(fams, fam, sample, **labels):
        for s in fams[fam].samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
        return None
    status = json.loads(subprocess.run(["akts", "status", "--json", "--socket", sock], capture_output=True, text=True).stdout)
    sel = val(fams, "akts_selected_slot", "akts_selected_slot")
    say(sel == status["selected"]["slot"], f"akts_selected_slot {sel} is what akts status says ({status['selected']['slot']})")
    op = val(fams, "akts_switches", "akts_switches_total", cause="operator")
    say(op is not None and op >= 2, f"akts_switches_total{{cause=operator}} counts the test's two switches: {op}")
    say(val(om_fams, "akts_switches", "akts_switches_total", cause="operator") == op if om_fams else False,
        "both formats carry the same switch count")
    cnt = val(fams, "akts_wait_seconds", "akts_wait_seconds_count", **{"class": "lc"})
    inf = val(fams, "akts_wait_seconds", "akts_wait_seconds_bucket", **{"class": "lc", "le": "+Inf"})
    say(cnt is not None and cnt > 0 and cnt == inf, f"the LC wait histogram has waits, +Inf equal to its count: {cnt} {inf}")
    age = val(fams, "akts_oldest_waiter_age_seconds", "akts_oldest_waiter_age_seconds", **{"class": "be"})
    say(age is not None and 0 <= age < 5, f"oldest-waiter age per class is there and sane: be {age}")
    lc = val(fams, "akts_managed_processes", "akts_managed_processes", **{"class": "lc"})
    say(lc is not None and lc >= 1, f"akts_managed_processes counts the classified LC process: {lc}")
    cpu = val(fams, "process_cpu_seconds", "process_cpu_seconds_total")
    say(cpu is not None and cpu > 0, f"the daemon's own CPU time: {cpu} s")
    for fam in ("akts_controller_decisions", "akts_breaker_trips", "akts_build_info", "akts_effective_slot"):
        say(fam in fams, f"{fam} is exported")
except Exception as e:
    say(False, f"the metrics checker failed: {e!r}")
PY
}

metrics_shut_listener() { # metrics_shut_listener PID PORT: shuts the process's TCP listening socket on PORT down
	python3 - "$1" "$2" <<'PY'
import ctypes, os, socket, sys
pid, port = int(sys.argv[1]), int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(pid)
for name in os.listdir(f"/proc/{pid}/fd"):
    fd = libc.syscall(438, pidfd, int(name), 0)  # pidfd_getfd: a copy of its descriptor
    if fd < 0:
        continue
    try:
        s = socket.socket(fileno=fd)
    except OSError:
        os.close(fd)
        continue
    with s:
        if (s.family == socket.AF_INET and s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                and s.getsockname()[1] == port):
            s.shutdown(socket.SHUT_RDWR)
            print(f"shut fd {name} of {pid}")
            sys.exit(0)
print(f"no listening socket on port {port} in {pid}")
PY
}

t_metrics() {
	local sock=/run/akts/metrics.sock cfg=/tmp/akts-metrics.json log=$OUT/metrics_daemon.log port=9464
	if [[ ! -x $CHECKERS/promtool ]]; then
		not_ok "promtool is in the guest ($CHECKERS/promtool: run with --file ~/.cache/akts/checkers)"
		return
	fi
	cat >"$cfg" <<JSON
{"socket": "$sock", "initial": "throughput", "audit_log": "", "state_file": "", "metrics_listen": "$port",
 "classes": [{"class": "lc", "comm": "metrics-lc"}, {"class": "be", "comm": "stress-ng"}]}
JSON
	# A bad or taken address changes nothing: refused before the scheduler attaches.
	local out rc
	out=$(akts daemon -c "$cfg" --metrics-listen 'nonsense:port' 2>&1)
	rc=$?
	if ((rc == 2)) && grep -q "metrics_listen" <<<"$out" && [[ $(cat /sys/kernel/sched_ext/state) == disabled ]]; then
		ok "a malformed --metrics-listen exits 2 and attaches nothing: ${out:0:100}"
	else
		not_ok "a malformed --metrics-listen exits 2 and attaches nothing (exit $rc): ${out:0:200}"
	fi
	python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1", 9465)); s.listen(); time.sleep(60)' &
	local squatter=$!
	wait_port 9465
	out=$(timeout 60 akts daemon -c "$cfg" --metrics-listen 127.0.0.1:9465 2>&1)
	rc=$?
	kill $squatter 2>/dev/null
	wait $squatter 2>/dev/null
	if ((rc == 1)) && grep -q "cannot listen on 127.0.0.1:9465" <<<"$out" && [[ $(cat /sys/kernel/sched_ext/state) == disabled ]]; then
		ok "a port already in use exits 1 before the scheduler attaches"
	else
		not_ok "a port already in use exits 1 before the scheduler attaches (exit $rc): ${out:0:200}"
	fi

	akts daemon -c "$cfg" >"$log" 2>&1 &
	local dpid=$! i
	for i in $(seq 1 100); do [[ -S $sock ]] && break; sleep 0.1; done
	for i in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.1; done
	# Something to count: an LC process that wakes often, BE hogs, two switches.
	python3 -c 'import ctypes, time
ctypes.CDLL(None).prctl(15, b"metrics-lc")
while True: time.sleep(0.002)' &
	local lcp=$!
	stress-ng --cpu 2 --timeout 30s --temp-path /tmp >/dev/null 2>&1 &
	local hogs=$!
	sleep 2
	akts switch --socket $sock latency >/dev/null && akts switch --socket $sock throughput >/dev/null
	sleep 2
	# Idle connections (clients that never send), more than the listener has threads, do not hold a scrape up
	# for long: each is let go after a second.
	local idle=()
	for i in $(seq 1 12); do
		python3 -c 'import socket,time; s=socket.create_connection(("127.0.0.1", '$port')); time.sleep(30)' &
		idle+=($!)
	done
	sleep 0.5
	verdicts < <(metrics_checks "http://127.0.0.1:$port/metrics" "$sock")
	out=$(curl -s -o /dev/null -w '%{http_code}' -d x "http://127.0.0.1:$port/metrics")
	[[ $out == 405 ]] && ok "POST /metrics is refused with 405" || not_ok "POST /metrics is refused with 405: $out"
	out=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics?x=$(head -c 3000 /dev/zero | tr '\0' 'a')" | head -c 40)
	kill -0 $dpid 2>/dev/null && ok "the daemon lives after odd requests" || not_ok "the daemon lives after odd requests"
	kill "${idle[@]}" $lcp $hogs 2>/dev/null
	wait "${idle[@]}" $lcp $hogs 2>/dev/null
	# A listener whose socket fails (httplib gives up on accept errors such as ENFILE) is started again on the
	# same address 1 s later, and 2 s later when it fails again within a minute. Its socket is shut down from
	# outside, through pidfd_getfd, which fails accept as such an error would.
	local k again
	for k in 1 2; do
		out=$(metrics_shut_listener $dpid $port)
		for i in $(seq 1 100); do (($(grep -c "metrics: listening again at" "$log") >= k)) && break; sleep 0.1; done
		again=$(grep "metrics: the listener on .* failed" "$log" | sed -n ${k}p)
		if [[ $out == shut* && $again == *"listening again in $k s" ]] &&
			(($(grep -c "metrics: listening again at http://127.0.0.1:$port/metrics" "$log") == k)) &&
			curl -sf -o /dev/null --max-time 10 "http://127.0.0.1:$port/metrics"; then
			ok "a listener whose socket failed (time $k) is started again on its port and answers: ${again:0:150}"
		else
			not_ok "a listener whose socket failed (time $k) is started again ($out; $(grep 'metrics: ' "$log" | tail -n 2 | tr '\n' ' '))"
		fi
	done
	# A scraper that keeps its connection alive (as Prometheus does) does not hold the daemon's stop up.
	python3 -c '
import http.client, time
c = http.client.HTTPConnection("127.0.0.1", '$port', timeout=60)
c.request("GET", "/metrics"); c.getresponse().read()
time.sleep(60)' &
	local keeper=$!
	sleep 1
	local t0=$SECONDS
	kill -TERM $dpid
	for i in $(seq 1 300); do kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
	kill -0 $dpid 2>/dev/null && kill -KILL $dpid # a stop that hangs fails the checks below, not the suite
	wait $dpid
	rc=$?
	local took=$((SECONDS - t0))
	kill $keeper 2>/dev/null
	wait $keeper 2>/dev/null
	((rc == 0)) && ok "the daemon with --metrics-listen stops cleanly" || not_ok "the daemon with --metrics-listen stops cleanly (exit $rc)"
	((took < 20)) && ok "a kept-alive scrape connection does not hold the stop up (${took} s)" ||
		not_ok "a kept-alive scrape connection does not hold the stop up (${took} s)"
	if curl -s --max-time 2 "http://127.0.0.1:$port/metrics" >/dev/null; then
		not_ok "the port is closed after the daemon stopped"
	else
		ok "the port is closed after the daemon stopped"
	fi
}
