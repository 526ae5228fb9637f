#!/usr/bin/env python3
"""How the daemon's classification scales (runs in the guest): N idle processes that a rule names, then
the daemon's CPU use while nothing happens and the time from a new process's exec to its class in the
kernel, with the tracker scanning /proc every 100 ms (`process_events: false`, the way it was) and following
the kernel's proc connector (`process_events: true`, `rescan_interval_ms: 30000`: a 30 s rescan as a safety net).

  classify_bench.py OUT_DIR [--counts 100,1000,10000] [--modes scan,events] [--probes 20] [--idle 10]

Writes OUT_DIR/classify.json and prints one line per (mode, N). Each probe is a copy of sleep named
akts-probe, spawned at a random moment (so a probe lands anywhere in a scan period); its latency runs from
just before posix_spawn to the first v1.class answer that shows its LC entry (answers polled every ms)."""
import argparse, json, os, random, shutil, signal, socket, subprocess, sys, time

SOCK = "/run/akts/classify-bench.sock"


class Rpc:
    def __init__(self, path):
        self.path, self.s, self.buf, self.id = path, None, b"", 0

    def call(self, method, params=None):
        for attempt in (0, 1):  # the daemon closes idle connections: reconnect once
            try:
                if self.s is None:
                    self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self.s.settimeout(30)
                    self.s.connect(self.path)
                    self.buf = b""
                self.id += 1
                self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                                           "params": params or {}}).encode() + b"\n")
                while b"\n" not in self.buf:
                    chunk = self.s.recv(1 << 20)
                    if not chunk:
                        raise ConnectionError("closed")
                    self.buf += chunk
                line, self.buf = self.buf.split(b"\n", 1)
                r = json.loads(line)
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error']}")
                return r["result"]
            except (OSError, ConnectionError):
                if self.s:
                    self.s.close()
                self.s = None
                if attempt:
                    raise


def spawn(path, *args):
    return os.posix_spawn(path, [os.path.basename(path), *args], os.environ)


def reap(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in pids:
        try:
            os.waitpid(p, 0)
        except ChildProcessError:
            pass


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))] if xs else None


def run(mode, n, probes, idle_s, rng, log):
    cfg = f"/tmp/akts-classify-{mode}.json"
    with open(cfg, "w") as f:
        json.dump({"socket": SOCK, "audit_log": "", "state_file": "", "repository": "",
                   "process_events": mode == "events", "scan_interval_ms": 100, "rescan_interval_ms": 30000,
                   "breaker": {"armed": False},
                   "classes": [{"class": "be", "comm": "akts-idle"}, {"class": "lc", "comm": "akts-probe"}]}, f)
    t0 = time.monotonic()
    idle = [spawn("/tmp/akts-idle", "100000") for _ in range(n)]
    spawn_s = time.monotonic() - t0
    daemon = subprocess.Popen(["akts", "daemon", "-c", cfg], stdout=log, stderr=log)
    rpc = Rpc(SOCK)
    res = {"mode": mode, "processes": n, "spawn_s": round(spawn_s, 2)}
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:
            try:
                st = rpc.call("v1.stats")
                if st["managed"]["be"] >= n:
                    break
            except Exception:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError(f"the daemon did not take up {n} processes within 120 s")
        res["takeup_s"] = round(time.monotonic() - t0, 2)
        # CPU while nothing happens: the tracker's cost with N processes alive.
        c0, w0 = rpc.call("v1.stats")["process"]["cpu_seconds"], time.monotonic()
        time.sleep(idle_s)
        st = rpc.call("v1.stats")
        res["daemon_cpu_percent"] = round(100 * (st["process"]["cpu_seconds"] - c0) / (time.monotonic() - w0), 2)
        res["scans"] = st["tracker"]["scans"]
        res["last_scan_ms"] = round(st["tracker"]["last_scan_ms"], 1)
        res["max_scan_ms"] = round(st["tracker"]["max_scan_ms"], 1)
        res["tracker_mode"] = st["tracker"]["mode"]
        lat = []
        for _ in range(probes):
            time.sleep(rng.uniform(0, 0.3))
            t = time.monotonic()
            pid = spawn("/tmp/akts-probe", "60")
            while True:
                r = rpc.call("v1.class", {"pid": pid})
                if r["kernel_entry"] and r["kernel_class"] == "lc":
                    lat.append((time.monotonic() - t) * 1e3)
                    break
                if time.monotonic() - t > 30:
                    lat.append(None)
                    break
                time.sleep(0.001)
            reap([pid])
        ok = [x for x in lat if x is not None]
        res["exec_to_class_ms"] = {"p50": percentile(ok, 0.5), "p95": percentile(ok, 0.95), "max": max(ok) if ok else None,
                                   "probes": len(lat), "unclassified_after_30s": len(lat) - len(ok)}
        res["events"] = rpc.call("v1.stats")["tracker"]["events"]
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        reap(idle)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--counts", default="100,1000,10000")
    ap.add_argument("--modes", default="scan,events")
    ap.add_argument("--probes", type=int, default=20)
    ap.add_argument("--idle", type=float, default=10)
    a = ap.parse_args()
    counts = [int(x) for x in a.counts.split(",")]
    modes = a.modes.split(",")
    if any(m not in ("scan", "events") for m in modes) or any(c < 1 or c > 30000 for c in counts) or a.probes < 1:
        sys.exit("classify_bench: --modes takes scan,events; --counts 1 to 30000; --probes at least 1")
    os.makedirs(a.out, exist_ok=True)
    for name in ("akts-idle", "akts-probe"):
        shutil.copy("/bin/sleep", f"/tmp/{name}")
    with open("/proc/meminfo") as f:
        mem = {l.split(":")[0]: int(l.split()[1]) for l in f}
    report = {"kernel": os.uname().release, "cpus": os.cpu_count(), "mem_total_mib": mem["MemTotal"] // 1024,
              "probes": a.probes, "idle_s": a.idle, "results": []}
    rng = random.Random(7)
    with open(os.path.join(a.out, "classify_daemon.log"), "w") as log:
        for n in counts:
            for mode in modes:
                try:
                    r = run(mode, n, a.probes, a.idle, rng, log)
                except Exception as e:
                    r = {"mode": mode, "processes": n, "error": str(e)}
                with open("/proc/meminfo") as f:
                    r["mem_available_mib_after"] = int([l for l in f if l.startswith("MemAvailable")][0].split()[1]) // 1024
                report["results"].append(r)
                e = r.get("exec_to_class_ms", {})
                if "error" not in r and e.get("p50") is None:
                    r["error"] = f"no probe was classified within 30 s ({e.get('probes')} probes)"
                print(f"{mode:>6} {n:>6} processes: "
                      + (f"error: {r['error']}" if "error" in r else
                         f"exec->class p50 {e['p50']:.1f} ms p95 {e['p95']:.1f} ms max {e['max']:.1f} ms, daemon CPU "
                         f"{r['daemon_cpu_percent']:.2f}% idle, scan {r['last_scan_ms']} ms (max {r['max_scan_ms']}), "
                         f"takeup {r['takeup_s']} s"), flush=True)
                with open(os.path.join(a.out, "classify.json"), "w") as f:
                    json.dump(report, f, indent=2)
    sys.exit(1 if any("error" in r for r in report["results"]) else 0)


if __name__ == "__main__":
    main()
