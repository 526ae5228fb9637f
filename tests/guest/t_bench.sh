# The benchmarks run every arm and report sane numbers: positive, ordered,
# n as asked, with a hundred samples (the figures, with thousands: `./akts bench
# switching`). The speed targets are the benchmark's to report, not this test's.
# bench_json FILE ARGS...: runs `akts bench ARGS --json` into FILE, one verdict.
bench_json() {
	local file="$1"
	shift
	if akts bench "$@" --json >"$file" 2>/dev/null; then
		ok "bench $1 ran"
	else
		not_ok "bench $1 ran"
		return 1
	fi
}

t_bench() {
	local a=$OUT/bench_actuation.json d=$OUT/bench_dispatch.json
	bench_json "$a" actuation -n 100 --reload-n 2 || return
	verdicts < <(python3 - "$a" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = 100  # the least -n takes
want_n = {"store": 20 * max(1, (n // 20) // 10), "map_update": n, "sysctl_pwrite": n,
          "sysctl_open_write_close": n, "debugfs_base_slice": n, "full_reload": 2, "process_switch": 2}
for arm in r["arms"]:
    k = arm["key"]
    if k == "compile":  # the guest has no compiler: it must say so
        ok = "skipped" in arm and "clang" in arm["skipped"]
        print("ok" if ok else "not", f"arm compile skipped in the guest with a reason: {arm.get('skipped')}", sep="\t")
        continue
    s = arm.get("summary")
    if not s:
        print("not", f"arm {k} ran (skipped: {arm.get('skipped')})", sep="\t")
        continue
    sane = s["n"] == want_n[k] and 0 < s["min_ns"] <= s["p50_ns"] <= s["p99_ns"] <= s["max_ns"] and s["mean_ns"] > 0
    print("ok" if sane else "not", f"arm {k}: n={s['n']} (asked {want_n[k]}), p50 {s['p50_ns']:.1f} ns, p99 {s['p99_ns']:.1f} ns", sep="\t")
ratio = r["arms"][1].get("ratio_to_sysctl_p50")
print("ok" if ratio and ratio > 0 else "not", f"ratios to the sysctl write are reported ({ratio})", sep="\t")
PY
)
	bench_json "$d" dispatch -n 3 --reps 1 || return
	verdicts < <(python3 - "$d" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
se = r["switch_to_effect"]
for mode in ("store", "kick"):
    f, e = se[mode]["until_first_cpu"], se[mode]["until_every_cpu"]
    sane = f["n"] + se["timeouts"] >= 3 and f["n"] > 0 and 0 < f["p50_ns"] <= e["p50_ns"]
    print("ok" if sane else "not", f"switch-to-effect {mode}: n={f['n']}, first {f['p50_ns']:.0f} ns <= every {e['p50_ns']:.0f} ns", sep="\t")
pe = r["per_event_cost"]
for k, c in pe["configs"].items():
    sane = c["events"] > 0 and c["ns_per_event"] > 0
    print("ok" if sane else "not", f"per-event cost {k}: {c['ns_per_event']:.0f} ns over {c['events']} events", sep="\t")
print("ok" if pe.get("dispatcher_over_standalone", 0) > 0 else "not", f"dispatcher/stand-alone ratio reported ({pe.get('dispatcher_over_standalone')})", sep="\t")
g = pe.get("guard", {})
print("ok" if g.get("timer_firings", 0) > 0 and g.get("timer_ns_per_firing", 0) > 0 else "not", f"the guard's timer cost is reported: {g.get('timer_ns_per_firing', 0):.0f} ns per firing over {g.get('timer_firings')} firings", sep="\t")
PY
)
	local t=$OUT/bench_tailcall.json
	bench_json "$t" tailcall --rounds 3 --repeat 100000 || return
	verdicts < <(python3 - "$t" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
arms = r["ns_per_run"]
sane = len(arms) == 3 and all(v["n"] == 3 and v["p50_ns"] > 0 for v in arms.values())
print("ok" if sane else "not", f"tailcall arms ran: {json.dumps({k: v['p50_ns'] for k, v in arms.items()})}", sep="\t")
PY
)
}
