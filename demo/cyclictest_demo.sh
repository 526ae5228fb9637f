#!/bin/bash
# The switching demo: latency-critical work (cyclictest, run through
# `akts run --class lc`) beside best-effort CPU hogs (stress-ng, two per CPU,
# classified by the daemon's comm matcher), under the akts daemon. The policy
# changes on a schedule; each phase reports the running policy, where the
# dispatcher's calls went, each class's wait p50/p99 (from the kernel's own
# histograms), cyclictest's wake-up latency and the CPU time batch work got.
#
#   demo.sh [PHASE_SECONDS] [OUT_DIR]
set -uo pipefail
PHASE=${1:-6}
OUT=${2:-/tmp/akts-demo}
mkdir -p "$OUT"
NCPU=$(nproc)
SOCK=/run/akts/demo.sock
cd /tmp

cat >"$OUT/akts.json" <<JSON
{"socket": "$SOCK", "policies": ["latency", "throughput"], "initial": "throughput",
 "classes": [{"class": "be", "comm": "stress-ng"}]}
JSON
echo "== akts demo: $NCPU CPUs, kernel $(uname -r), ${PHASE}s per phase"
akts daemon -c "$OUT/akts.json" >"$OUT/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 1 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
[[ -S $SOCK ]] || { echo "the daemon did not start:"; cat "$OUT/daemon.log"; exit 1; }
trap 'kill -TERM $DAEMON 2>/dev/null; wait $DAEMON' EXIT
akts policies --socket $SOCK

# Batch work for the whole run: two CPU hogs per CPU.
PHASES=("throughput" "latency" "5" "latency" "throughput")
TOTAL=$(( (${#PHASES[@]} + 1) * (PHASE + 2) ))
stress-ng --cpu $((2 * NCPU)) --timeout "$TOTAL" --temp-path /tmp -q &
HOGS=$!
sleep 1

be_cpu_ticks() { # CPU ticks used so far by the stress-ng workers
	local t=0 p
	for p in $(pgrep -P $HOGS); do
		t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)))
	done
	echo $t
}

i=0
for target in "${PHASES[@]}"; do
	i=$((i + 1))
	if [[ $target =~ ^[0-9]+$ ]]; then
		akts switch --socket $SOCK --force "$target"
	else
		akts switch --socket $SOCK "$target"
	fi
	sleep 0.5
	t0=$(be_cpu_ticks)
	akts stats --socket $SOCK -i "${PHASE}s" -n 1 --json >"$OUT/phase$i.stats.json" &
	STATS=$!
	akts run --socket $SOCK --class lc -- cyclictest -q -t1 -i 2000 -D "$PHASE" >"$OUT/phase$i.cyclictest.txt" 2>&1
	wait $STATS
	t1=$(be_cpu_ticks)
	echo "$(( (t1 - t0) ))" >"$OUT/phase$i.be_ticks"
	echo "$target" >"$OUT/phase$i.target"
	echo "-- phase $i done: $(tail -n1 "$OUT/phase$i.cyclictest.txt" | tr -s ' ')"
done
kill $HOGS 2>/dev/null
wait $HOGS 2>/dev/null

python3 - "$OUT" "${#PHASES[@]}" "$(getconf CLK_TCK)" <<'PY'
import json, re, sys
out, n, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def fmt(ns):
    if ns is None: return "-"
    return f"{ns/1e3:.0f}us" if ns < 1e6 else f"{ns/1e6:.1f}ms"
rows = []
print()
print(f"{'phase':<6}{'running':<14}{'calls/s':>9}{'reached':>9}{'default':>9}"
      f"{'LC wait p50/p99':>20}{'BE wait p50/p99':>20}{'cyclictest avg/max':>20}{'BE CPU s':>10}")
for i in range(1, n + 1):
    s = json.load(open(f"{out}/phase{i}.stats.json"))
    cb = s["callbacks"]
    tot = sum(c["entries"] for c in cb.values())
    ft = sum(c["fallthrough"] for c in cb.values())
    ct = open(f"{out}/phase{i}.cyclictest.txt").read()
    m = re.search(r"Avg:\s*(\d+)\s+Max:\s*(\d+)", ct)
    avg, mx = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    be = int(open(f"{out}/phase{i}.be_ticks").read()) / hz
    policy = s["policy"] or f"default (slot {s['effective']})"
    w = s["wait"]
    row = {"phase": i, "policy": policy, "calls_per_s": tot / s["interval_seconds"],
           "reached_policy_pct": 100 * (tot - ft) / tot if tot else 0, "default_pct": 100 * ft / tot if tot else 0,
           "lc_wait_p50_ns": w["lc"]["p50_ns"], "lc_wait_p99_ns": w["lc"]["p99_ns"], "lc_waits": w["lc"]["count"],
           "be_wait_p50_ns": w["be"]["p50_ns"], "be_wait_p99_ns": w["be"]["p99_ns"], "be_waits": w["be"]["count"],
           "cyclictest_avg_us": avg, "cyclictest_max_us": mx, "be_cpu_seconds": be}
    rows.append(row)
    print(f"{i:<6}{policy:<14}{row['calls_per_s']:>9.0f}{row['reached_policy_pct']:>8.1f}%{row['default_pct']:>8.1f}%"
          f"{fmt(row['lc_wait_p50_ns']) + ' / ' + fmt(row['lc_wait_p99_ns']):>20}"
          f"{fmt(row['be_wait_p50_ns']) + ' / ' + fmt(row['be_wait_p99_ns']):>20}"
          f"{(str(avg) + 'us / ' + str(mx) + 'us') if avg is not None else '-':>20}{be:>10.1f}")
json.dump(rows, open(f"{out}/demo.json", "w"), indent=1)
print()
print("Waits are the dispatcher's enqueue-to-running histograms (log2 buckets); cyclictest is wake-up latency")
print("of the LC task; BE CPU s is the CPU time the stress-ng hogs got in the phase. Slot 5 is empty: every")
print("call falls through to the built-in default, and nothing breaks. Figures are from an emulated (TCG) guest.")
PY
