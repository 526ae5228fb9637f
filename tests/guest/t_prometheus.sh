# A real Prometheus (bookworm's, from vm/fetch_checkers.sh) scrapes a running daemon every 2 s with the
# alerting rules of deploy/prometheus/akts-rules.yml loaded, while the test switches a policy and the breaker
# trips (throughput, then ten hogs and a spinning LC task on CPU 0, as t_breaker.sh). Then every query of
# deploy/grafana/akts.json, with Grafana's variables substituted, must return series with the job's label
# through Prometheus's query API; the switch and breaker panels must show this test's switch and trip; the
# breaker's alert must fire. The panels' data over the test is saved (OUT/prometheus_panels.json) for
# docs/deploy.md's plot (deploy/grafana/plot_panels.py).
PROM_PORT=9091

prom_checks() { # prom_checks DASHBOARD RULES T_SWITCH T_TRIP T_BACK OUTFILE: the queries, as ok/not lines
	python3 - "$@" <<'PY'
import json, sys, time, urllib.parse, urllib.request
dash, rules_file, outfile = sys.argv[1], sys.argv[2], sys.argv[6]
t_switch, t_trip, t_back = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
base = "http://127.0.0.1:9091/api/v1/"
def say(good, what):
    print(("ok" if good else "not") + "\t" + what.replace("\n", " ")[:300])
def api(path, **params):
    with urllib.request.urlopen(base + path + "?" + urllib.parse.urlencode(params), timeout=20) as r:
        j = json.load(r)
    if j.get("status") != "success":
        raise RuntimeError(f"{path}: {j}")
    return j["data"]
# Grafana's variables at a 2 s scrape interval: $__rate_interval is max($__interval + scrape, 4 x scrape).
SUBST = {"$__rate_interval": "8s", "$__interval": "2s", "$__range": "60s", "$job": "akts", "$instance": ".*"}
def subst(e):
    for k in sorted(SUBST, key=len, reverse=True):
        e = e.replace(k, SUBST[k])
    return e
try:
    d = json.load(open(dash))
    targets = [(p["title"], t["expr"]) for p in d["panels"] for t in p.get("targets", [])]
    targets += [("annotation " + a["name"], a["expr"]) for a in d.get("annotations", {}).get("list", []) if a.get("expr")]
    now = time.time()
    start = t_switch - 15
    bad = []
    saved = {}
    for title, expr in targets:
        q = subst(expr)
        r = api("query_range", query=q, start=start, end=now, step="2")
        series = [s for s in r["result"] if s["metric"].get("job") == "akts"]
        saved[f"{title}: {expr}"] = r["result"]
        if not series or len(series) != len(r["result"]):
            bad.append(f"{title}: {q} ({len(r['result'])} series, {len(series)} with job=akts)")
    say(not bad, f"each of the dashboard's {len(targets)} queries returns series with job=\"akts\" through the query API"
        + (": " + "; ".join(bad) if bad else ""))
    # The job and node variables' values (Grafana's label_values).
    jobs = api("label/job/values", **{"match[]": "akts_build_info"})
    say(jobs == ["akts"], f"the dashboard's $job variable finds the job: {jobs}")
    def points(title_part, label, value):
        out = []
        for key, res in saved.items():
            if title_part in key:
                for s in res:
                    if s["metric"].get(label) == value:
                        out += [(float(t), float(v)) for t, v in s["values"] if v not in ("NaN",)]
        return out
    # The first switch, to throughput: an operator's switch in the panel after it and before the switch back.
    sw = [t for t, v in points("Switches by cause", "cause", "operator") if v > 0]
    say(any(t_switch <= t < t_back for t in sw),
        f"the switch panel shows the test's switch (operator) at {t_switch:.0f}, before the switch back at "
        f"{t_back:.0f}: rates at {[round(t) for t in sw][:8]}")
    tr = [t for t, v in points("Switches by cause", "cause", "breaker") if v > 0]
    say(t_trip > 0 and any(t_trip - 2 <= t <= t_trip + 12 for t in tr),
        f"the switch panel shows the trip (breaker) at {t_trip:.0f}: rates at {[round(t) for t in tr][:8]}")
    trips = [t for key, res in saved.items() if "Breaker and bounded-wait" in key and "trips_total" in key
             for s in res for t, v in s["values"] if v != "NaN" and float(v) > 0]
    say(t_trip > 0 and any(t_trip - 2 <= float(t) <= t_trip + 12 for t in trips),
        f"the breaker panel counts the trip: increases at {[round(float(t)) for t in trips][:6]}")
    running = [(t, s["metric"].get("policy")) for key, res in saved.items() if key.startswith("Running policy")
               for s in res for t, v in s["values"] if v == "1"]
    pol = {p for t, p in running}
    say({"latency", "throughput"} <= pol, f"the running-policy panel shows both policies over the test: {sorted(pol)}")
    alerts = api("alerts")["alerts"]
    names = sorted({a["labels"]["alertname"] + ":" + a["state"] for a in alerts})
    say(any(a["labels"]["alertname"] == "AktsBreakerTripped" and a["state"] == "firing" and a["labels"].get("job") == "akts"
            for a in alerts), f"the rules loaded into Prometheus fire AktsBreakerTripped for the trip: {names}")
    rules = api("rules")["groups"]
    want = open(rules_file).read().count("- alert:")
    say(any(g["name"] == "akts" and len(g["rules"]) == want for g in rules) and
        all(r.get("health") == "ok" for g in rules for r in g["rules"]),
        f"Prometheus loaded akts-rules.yml and evaluates its {want} rules without error "
        f"({sum(len(g['rules']) for g in rules)} loaded)")
    json.dump({"switch_s": t_switch, "trip_s": t_trip, "back_s": t_back, "start_s": start, "end_s": now, "queries": saved},
              open(outfile, "w"))
except Exception as e:
    say(False, f"the Prometheus checker failed: {e!r}")
PY
}

# prom_query PATH: Prometheus's API (PATH after /api/v1/) in lines: an instant query's first value, or each alert's
# name and state.
prom_query() {
	curl -s -m 2 "http://127.0.0.1:$PROM_PORT/api/v1/$1" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
if "alerts" in d:
    for a in d["alerts"]: print(a["labels"]["alertname"], a["state"])
elif d.get("result"):
    print(d["result"][0]["value"][1])' 2>/dev/null
}

t_prometheus() {
	local sock=/run/akts/prom.sock cfg=/tmp/akts-prom.json log=$OUT/prometheus_daemon.log port=9467 i
	local prom=/akts/bin/checkers/prometheus rules=/akts/bin/prometheus/akts-rules.yml dash=/akts/bin/grafana/akts.json
	if [[ ! -x $prom || ! -f $rules || ! -f $dash ]]; then
		not_ok "Prometheus, the rules and the dashboard are in the guest ($prom, $rules, $dash: run with --file ~/.cache/akts/checkers --file deploy/prometheus --file deploy/grafana)"
		return
	fi
	# CPU 0 is the contest (the hogs and the LC task); this shell, the daemon, Prometheus and the application's
	# stand-in run on CPU 1 (a fair-class task on CPU 0 would make the LC task wait: t_breaker.sh).
	local cpus
	cpus=$(taskset -pc $BASHPID | sed 's/.*: //')
	taskset -pc 1 $BASHPID >/dev/null
	# The application's /metrics: llama-server's two gauges, so the requests panel has something to read.
	python3 -c '
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"llamacpp:requests_processing 2\nllamacpp:requests_deferred 1\n"
        self.send_response(200); self.send_header("Content-Type", "text/plain"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", 8098), H).serve_forever()' &
	local app=$!
	cat >"$cfg" <<JSON
{"socket": "$sock", "policies": ["latency", "throughput"], "initial": "latency", "audit_log": "", "state_file": "",
 "metrics_listen": "127.0.0.1:$port", "breaker": {"cooldown": "3s", "calm": "500ms"},
 "objective": {"lc_wait_p99": "20ms"}, "telemetry": {"metrics_url": "http://127.0.0.1:8098/metrics"},
 "classes": [{"class": "be", "comm": "stress-ng"}]}
JSON
	akts daemon -c "$cfg" >"$log" 2>&1 &
	local dpid=$!
	for i in $(seq 1 100); do [[ -S $sock ]] && break; sleep 0.1; done
	rm -rf /tmp/prom-data && mkdir -p /tmp/prom-data
	cat >/tmp/prometheus.yml <<YML
global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 2s}
rule_files: ["$rules"]
scrape_configs:
  - job_name: akts
    static_configs: [{targets: ["127.0.0.1:$port"]}]
YML
	"$prom" --config.file=/tmp/prometheus.yml --storage.tsdb.path=/tmp/prom-data \
		--web.listen-address=127.0.0.1:$PROM_PORT >"$OUT/prometheus.log" 2>&1 &
	local ppid=$!
	local up=""
	for i in $(seq 1 150); do
		up=$(prom_query 'query?query=up%7Bjob%3D%22akts%22%7D')
		[[ $up == 1 ]] && break
		sleep 0.4
	done
	if [[ $up == 1 ]]; then
		ok "Debian's Prometheus ($("$prom" --version 2>&1 | head -n1 | cut -d' ' -f3)) scrapes the daemon: up{job=\"akts\"} is 1"
	else
		not_ok "Prometheus scrapes the daemon (up: '$up'; $(tail -n 3 "$OUT/prometheus.log" | tr '\n' ' ' | cut -c1-200))"
	fi
	sleep 6
	# The test's switch, to throughput while nothing contends (so throughput runs for a few scrapes), then the
	# trip: ten hogs and a spinning LC task on CPU 0.
	local t_switch t_trip="" t_back
	t_switch=$(date +%s.%N)
	akts switch --socket "$sock" throughput >/dev/null || not_ok "akts switch throughput"
	sleep 6
	taskset -c 0 stress-ng --cpu 10 --timeout 40s >/dev/null 2>&1 &
	local hogs=$!
	taskset -c 0 sh -c 'while :; do :; done' &
	local lc=$!
	akts classify --socket "$sock" $lc lc >/dev/null
	for i in $(seq 1 60); do
		if akts status --socket "$sock" | grep -q '^breaker .*TRIPPED'; then
			t_trip=$(date +%s.%N)
			break
		fi
		sleep 0.25
	done
	[[ -n $t_trip ]] && ok "the breaker tripped under throughput" || not_ok "the breaker tripped under throughput within 15 s"
	# Back to latency, which keeps the LC task served, once Prometheus has the trip (its alert fires: a scrape after
	# it and a rule evaluation), then until a scrape begun after the switch; each for at most 20 s (prom_checks says
	# what is missing).
	local deadline=$((SECONDS + 20)) t_switched
	while [[ -n $t_trip ]] && ((SECONDS < deadline)); do
		prom_query alerts | grep '^AktsBreakerTripped firing$' >/dev/null && break
		sleep 0.5
	done
	t_back=$(date +%s.%N)
	akts switch --socket "$sock" latency >/dev/null
	t_switched=$(date +%s.%N)
	deadline=$((SECONDS + 20))
	while ((SECONDS < deadline)); do
		awk -v a="$(prom_query 'query?query=timestamp(up%7Bjob%3D%22akts%22%7D)')" -v b="$t_switched" \
			'BEGIN { exit !(a != "" && a + 0 > b + 0) }' && break
		sleep 0.5
	done
	verdicts < <(prom_checks "$dash" "$rules" "$t_switch" "${t_trip:-0}" "$t_back" "$OUT/prometheus_panels.json")
	kill $hogs $lc $app 2>/dev/null
	wait $hogs $lc $app 2>/dev/null
	kill -TERM $ppid $dpid 2>/dev/null
	wait $ppid $dpid 2>/dev/null
	taskset -pc "$cpus" $BASHPID >/dev/null
	rm -rf /tmp/prom-data
}
