#!/bin/bash
# Switch round trips through the daemon's control socket while 64 idle clients hold connections and its tracker
# follows 1,000 processes (in the guest: `./akts bench control` runs it with 300 switches for the figure the
# README quotes; tests/guest/t_control.sh with 30, as a check that the loop runs).
#
#   control.sh OUT_DIR SWITCHES [SOCKET]
#
# With SOCKET it measures that running daemon, whose classes must manage `sleep`; without, it starts one (and
# stops it after). Writes OUT_DIR/control.json, control.txt (akts bench control's summary) and managed.txt (the
# sleep processes the daemon followed). Exit status: akts bench control's, or 1 if fewer than 1,000 were followed.
set -uo pipefail
OUT=$1 N=$2 SOCK=${3:-}
mkdir -p "$OUT"
dpid=""
if [[ -z $SOCK ]]; then
	SOCK=/run/akts/bench-control.sock
	cat >/tmp/akts-bench-control.json <<JSON
{"socket": "$SOCK", "initial": "throughput", "classes": [{"class": "be", "comm": "sleep"}]}
JSON
	akts daemon -c /tmp/akts-bench-control.json >"$OUT/control_daemon.log" 2>&1 &
	dpid=$!
	for _ in $(seq 1 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
fi
sleepers=()
for _ in $(seq 1 1000); do
	sleep 600 &
	sleepers+=($!)
done 2>/dev/null
managed=0
for _ in $(seq 1 120); do
	managed=$(akts status --socket "$SOCK" --json | python3 -c 'import json,sys; print(sum(1 for m in json.load(sys.stdin)["managed_processes"] if m["comm"] == "sleep"))')
	((managed >= 1000)) && break
	sleep 0.5
done
echo "$managed" >"$OUT/managed.txt"
akts bench control --socket "$SOCK" --idle-clients 64 -n "$N" --note "tracker following $managed processes" \
	--out "$OUT/control.json" >"$OUT/control.txt" 2>/dev/null
rc=$?
kill "${sleepers[@]}" 2>/dev/null
wait "${sleepers[@]}" 2>/dev/null
if [[ -n $dpid ]]; then
	kill -TERM "$dpid"
	wait "$dpid"
fi
cat "$OUT/control.txt"
((rc == 0)) || exit "$rc"
((managed >= 1000))
