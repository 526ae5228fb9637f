#!/usr/bin/env bash
# Packaging and deployment, checked on the host (./akts test runs it; TAP on stdout, exit 1 on any failure):
#  - the Debian package (CPack): its control data and contents, lintian's verdict (errors fail, warnings shown),
#    and dpkg -i / -r / -P in a fresh Debian 12 root (debootstrap minbase bookworm, cached) that ends as it began;
#  - `akts --version` names the commit the tree is at; the man page (help2man) is there and says something;
#  - the systemd unit (systemd-analyze verify where systemd is there);
#  - the Kubernetes manifest: yamllint, the fields a node agent needs, its config accepted by --check-config;
#  - the container image, built from scratch with buildah (when installed): its entrypoint and labels.
set -uo pipefail
source "$(dirname "$(readlink -f "$0")")/../../vm/common.sh"

n=0
failures=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $*"; }
# Reads "ok<TAB>text" / "not<TAB>text" lines from a checker; feed it with `verdicts < <(...)`.
verdicts() {
	local verdict what
	while IFS=$'\t' read -r verdict what; do
		if [[ $verdict == ok ]]; then ok "$what"; else not_ok "$what"; fi
	done
}

work=$(mktemp -d "${TMPDIR:-/tmp}/akts-pkg.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- the package
if ! (cd "$AKTS_BUILD" && cpack -G DEB -B "$work" >"$work/cpack.log" 2>&1); then
	not_ok "cpack builds the Debian package: $(tail -n 5 "$work/cpack.log" | tr '\n' ' ')"
	echo "1..$n"
	exit 1
fi
deb=$(ls "$work"/akts_*.deb 2>/dev/null | head -n1)
[[ -f "$deb" ]] && ok "cpack builds $(basename "$deb") ($(du -h "$deb" | cut -f1))" || not_ok "cpack leaves a .deb"
info=$(dpkg-deb --info "$deb")
contents=$(dpkg-deb --contents "$deb" | awk '{print $NF}')
for f in ./usr/bin/akts ./usr/lib/akts/bpf/akts_dispatcher.bpf.o ./usr/lib/akts/bpf/akts_latency.bpf.o \
	./usr/share/akts/include/akts.h ./usr/share/akts/include/scx/common.bpf.h ./usr/share/akts/include/bpf/bpf_helpers.h \
	./usr/lib/systemd/system/akts.service ./etc/akts/akts.json ./usr/share/man/man1/akts.1.gz \
	./usr/share/doc/akts/copyright ./usr/share/doc/akts/changelog.gz ./usr/share/doc/akts/deploy.md; do
	grep -qxF "$f" <<<"$contents" && ok "the package holds $f" || not_ok "the package holds $f"
done
grep -q '^ */etc/akts/akts.json$' < <(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles 2>/dev/null) &&
	ok "the config is a conffile (an edited one survives an upgrade)" || not_ok "the config is a conffile"
grep -q "^ Version: $("$AKTS_BUILD/akts" --version | awk '{print $2}')$" <<<"$info" &&
	ok "the package's version is the binary's" || not_ok "the package's version is the binary's: $(grep Version <<<"$info")"
mkdir -p "$work/x" && dpkg-deb -x "$deb" "$work/x"
grep -q '^ExecStart=/usr/bin/akts daemon --config /etc/akts/akts.json$' "$work/x/usr/lib/systemd/system/akts.service" &&
	ok "the unit starts the installed binary" || not_ok "the unit starts the installed binary: $(grep ExecStart "$work/x/usr/lib/systemd/system/akts.service")"
grep -q '^ExecReload=/usr/bin/akts reload$' "$work/x/usr/lib/systemd/system/akts.service" &&
	ok "the unit reloads through the installed binary (systemctl reload akts)" || not_ok "the unit reloads through the installed binary: $(grep ExecReload "$work/x/usr/lib/systemd/system/akts.service")"
if command -v systemd-analyze >/dev/null && [[ -d /run/systemd/system ]]; then
	out=$(systemd-analyze verify --man=no "$work/x/usr/lib/systemd/system/akts.service" 2>&1 | grep -v "Command /usr/bin/akts is not executable\|is not executable: No such file" || true)
	[[ -z "$out" ]] && ok "systemd-analyze verify accepts the unit" || not_ok "systemd-analyze verify: $out"
else
	echo "# no running systemd here: the unit is not verified by systemd-analyze"
fi
if zcat "$work/x/usr/share/man/man1/akts.1.gz" | grep -q 'akts daemon' &&
	zcat "$work/x/usr/share/man/man1/akts.1.gz" | grep -q '^\.SH "\?EXIT STATUS'; then
	ok "the man page (help2man) documents the commands and the exit status"
else
	not_ok "the man page (help2man) documents the commands and the exit status"
fi
if command -v lintian >/dev/null; then
	lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges' >"$work/lintian.txt"
	errors=$(grep -c '^E: ' "$work/lintian.txt" || true)
	warnings=$(grep -c '^W: ' "$work/lintian.txt" || true)
	sed 's/^/# lintian: /' "$work/lintian.txt"
	((errors == 0)) && ok "lintian finds no error ($warnings warnings, listed above)" || not_ok "lintian finds $errors errors"
else
	not_ok "lintian is installed (./akts setup installs it)"
fi

# --- installed and removed in a fresh Debian 12
broot=$(bash "$AKTS_ROOT/vm/build_bookworm_root.sh") || broot=""
if [[ -n "$broot" && -f "$broot" ]]; then
	r="$work/root"
	mkdir -p "$r" && tar -xf "$broot" -C "$r"
	cp "$deb" "$r/tmp/akts.deb"
	if chroot "$r" dpkg -i /tmp/akts.deb >"$work/dpkg.log" 2>&1; then
		ok "dpkg -i installs the package in a fresh Debian 12 root"
	else
		not_ok "dpkg -i installs the package in a fresh Debian 12 root: $(tail -n 3 "$work/dpkg.log" | tr '\n' ' ')"
	fi
	ver=$(chroot "$r" /usr/bin/akts --version 2>&1)
	[[ $ver == "akts "* ]] && ok "the installed akts runs there: $ver" || not_ok "the installed akts runs there: $ver"
	out=$(chroot "$r" /usr/bin/akts daemon --check-config -c /etc/akts/akts.json 2>&1)
	[[ $out == "config OK"* ]] && ok "the installed example config passes --check-config" || not_ok "the installed example config passes --check-config: ${out:0:200}"
	audit=$(chroot "$r" dpkg --audit 2>&1)
	[[ -z "$audit" ]] && ok "dpkg --audit is clean after the install" || not_ok "dpkg --audit after the install: $audit"
	echo '{"socket": "/run/akts/edited.sock"}' >"$r/etc/akts/akts.json"
	chroot "$r" dpkg -r akts >>"$work/dpkg.log" 2>&1 && ok "dpkg -r removes it" || not_ok "dpkg -r removes it"
	left=$(cd "$r" && { find usr/share/akts usr/lib/akts usr/bin/akts usr/lib/systemd/system/akts.service usr/share/doc/akts 2>/dev/null || true; })
	[[ -z "$left" ]] && ok "nothing of it is left but the config" || not_ok "left after dpkg -r: $left"
	grep -q edited "$r/etc/akts/akts.json" 2>/dev/null && ok "the edited config stays after dpkg -r (a conffile)" || not_ok "the edited config stays after dpkg -r"
	chroot "$r" dpkg -P akts >>"$work/dpkg.log" 2>&1 && ok "dpkg -P purges it" || not_ok "dpkg -P purges it"
	rm -f "$r/tmp/akts.deb"
	left=$(cd "$r" && find etc/akts usr/share/akts usr/lib/akts 2>/dev/null || true)
	[[ -z "$left" ]] && ok "after the purge the root holds nothing of akts" || not_ok "after the purge: $left"
else
	not_ok "a fresh Debian 12 root for dpkg -i / -r (vm/build_bookworm_root.sh)"
fi

# --- akts --version names the commit
commit=$(git -c safe.directory="$AKTS_ROOT" -C "$AKTS_ROOT" rev-parse --short=12 HEAD 2>/dev/null)
ver=$("$AKTS_BUILD/akts" --version)
[[ -n "$commit" && $ver == *"commit $commit"* ]] && ok "akts --version names the commit: $ver" || not_ok "akts --version names the commit $commit: $ver"

# --- the Kubernetes manifest
ds="$AKTS_ROOT/deploy/kubernetes/akts-daemonset.yaml"
if command -v yamllint >/dev/null; then
	out=$(yamllint -c "$AKTS_ROOT/.yamllint" -f parsable "$ds" 2>&1)
	[[ -z "$out" ]] && ok "yamllint accepts the DaemonSet manifest" || not_ok "yamllint: $out"
else
	not_ok "yamllint is installed (./akts setup installs it)"
fi
verdicts < <(/usr/bin/python3 - "$ds" "$AKTS_BUILD/akts" <<'PY'
import json, subprocess, sys, tempfile, yaml
def say(good, what):
    print(("ok" if good else "not") + "\t" + what)
try:
  docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
  kinds = {d["kind"]: d for d in docs}
  ds, cm = kinds.get("DaemonSet"), kinds.get("ConfigMap")
  spec = ds["spec"]["template"]["spec"]
  c = spec["containers"][0]
  say(spec.get("hostPID") is True, "the DaemonSet shares the host's pid namespace (it classifies the node's processes)")
  say(c.get("securityContext", {}).get("privileged") is True, "its container is privileged (sched_ext, other processes' policies)")
  mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
  vols = {v["name"]: v for v in spec["volumes"]}
  for path, host in (("/sys/fs/bpf", "/sys/fs/bpf"), ("/sys", "/sys"), ("/sys/fs/cgroup", "/sys/fs/cgroup"), ("/run/akts", "/run/akts")):
      m = mounts.get(path)
      say(m is not None and vols[m["name"]].get("hostPath", {}).get("path") == host, f"{path} is the host's {host}")
  ann = ds["spec"]["template"]["metadata"].get("annotations", {})
  cfg = json.loads(cm["data"]["akts.json"])
  port = cfg.get("metrics_listen", "").rsplit(":", 1)[-1]
  say(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == port and
      any(p["containerPort"] == int(port) for p in c.get("ports", [])),
      f"Prometheus scrape annotations name the metrics port the config serves ({port})")
  say(cfg.get("socket", "").startswith("/run/akts/"), "the control socket lands on the host path")
  with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
      json.dump(cfg, f)
      f.flush()
      p = subprocess.run([sys.argv[2], "daemon", "--check-config", "-c", f.name], capture_output=True, text=True)
      say(p.returncode == 0, "the ConfigMap's config passes akts daemon --check-config: " + ((p.stdout + p.stderr).strip() or "(nothing)").splitlines()[0][:100])
except Exception as e:
  say(False, f"the manifest's checker failed: {e!r}")
PY
)

# --- the alerting rules and the dashboard (docs/deploy.md; a real Prometheus runs both in tests/guest/t_prometheus.sh)
promtool=$AKTS_CACHE/checkers/promtool
if [[ -x $promtool ]]; then
	out=$("$promtool" check rules "$AKTS_ROOT/deploy/prometheus/akts-rules.yml" 2>&1)
	[[ $? == 0 ]] && ok "promtool check rules passes deploy/prometheus/akts-rules.yml: $(grep -o 'SUCCESS.*' <<<"$out")" ||
		not_ok "promtool check rules passes akts-rules.yml: ${out//$'\n'/ }"
	out=$(cd "$AKTS_ROOT/deploy/prometheus" && "$promtool" test rules akts-rules.test.yml 2>&1)
	[[ $? == 0 ]] && ok "promtool test rules: every alert's unit tests pass (akts-rules.test.yml)" ||
		not_ok "promtool test rules akts-rules.test.yml: ${out//$'\n'/ }"
	# Every alert has a unit test that expects it to fire.
	missing=$(/usr/bin/python3 - "$AKTS_ROOT/deploy/prometheus" <<'PY'
import sys, yaml
d = sys.argv[1]
alerts = {r["alert"] for g in yaml.safe_load(open(d + "/akts-rules.yml"))["groups"] for r in g["rules"] if "alert" in r}
fired = {t["alertname"] for case in yaml.safe_load(open(d + "/akts-rules.test.yml"))["tests"]
         for t in case.get("alert_rule_test", []) if t.get("exp_alerts")}
print(" ".join(["checked"] + sorted(alerts - fired)))
PY
)
	if [[ $missing == checked ]]; then
		ok "every alert has a unit test in which it fires"
	else
		not_ok "every alert has a unit test in which it fires: ${missing:-the checker failed}"
	fi
else
	not_ok "promtool is in $AKTS_CACHE/checkers (vm/fetch_checkers.sh)"
fi
verdicts < <(/usr/bin/python3 - "$AKTS_ROOT/deploy/grafana/akts.json" "$AKTS_ROOT/deploy/prometheus/akts-rules.yml" <<'PY'
import json, re, sys, yaml
def say(good, what):
    print(("ok" if good else "not") + "\t" + what)
try:
    d = json.load(open(sys.argv[1]))
    exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    say(len(exprs) >= 10 and all('job="$job"' in e or e.startswith("up{") for e in exprs),
        f"the dashboard's {len(exprs)} queries select the $job variable")
    ids = [p["id"] for p in d["panels"]]
    say(len(ids) == len(set(ids)), "the dashboard's panel ids are unique")
    metrics = set(re.findall(r"\b(akts_[a-z_]+)", " ".join(exprs)))
    for need in ("akts_policy_running", "akts_switches_total", "akts_wait_seconds_bucket", "akts_objective_limit_seconds",
                 "akts_run_seconds_total", "akts_breaker_trips_total", "akts_guard_rescues_total",
                 "akts_telemetry_last_window_timestamp_seconds"):
        say(need in metrics, f"a panel reads {need}")
    dsvar = [v for v in d["templating"]["list"] if v.get("type") == "datasource"]
    say(len(dsvar) == 1 and dsvar[0].get("query") == "prometheus" and
        all(p.get("datasource", {}).get("uid") == "${" + dsvar[0]["name"] + "}" for p in d["panels"] if p["type"] != "row"),
        "the dashboard's panels read the Prometheus data source its variable picks (import or file provisioning)")
except Exception as e:
    say(False, f"the dashboard's checker failed: {e!r}")
PY
)

# --- the container image
if command -v buildah >/dev/null; then
	if bash "$AKTS_ROOT/deploy/container/build.sh" "$work/akts-image.tar" >"$work/image.log" 2>&1; then
		ok "the container image builds from scratch with buildah ($(du -h "$work/akts-image.tar" | cut -f1))"
		cfg=$(buildah inspect --type image localhost/akts:latest 2>/dev/null)
		verdicts < <(/usr/bin/python3 - "$cfg" "$commit" <<'PY'
import json, sys
def say(good, what):
    print(("ok" if good else "not") + "\t" + what)
try:
    c = json.loads(sys.argv[1])["OCIv1"]["config"]
    say(c.get("Entrypoint") == ["/usr/bin/akts"] and c.get("Cmd") == ["daemon", "--config", "/etc/akts/akts.json"],
        f"the image runs the daemon: {c.get('Entrypoint')} {c.get('Cmd')}")
    say(bool(sys.argv[2]) and c.get("Labels", {}).get("org.opencontainers.image.revision", "").startswith(sys.argv[2]),
        "the image's revision label names the commit")
    say("9464/tcp" in c.get("ExposedPorts", {}), "the image exposes the metrics port")
except Exception as e:
    say(False, f"the image's config cannot be read: {e!r}")
PY
)
		ctr=$(buildah from localhost/akts:latest 2>/dev/null)
		out=$(buildah run --isolation chroot "$ctr" -- /usr/bin/akts --version 2>&1)
		[[ $out == "akts "* ]] && ok "akts runs inside the image: $out" || echo "# buildah run could not start a container here: ${out:0:200}"
		out=$(buildah run --isolation chroot "$ctr" -- /usr/bin/akts daemon --check-config -c /etc/akts/akts.json 2>&1)
		[[ $out == "config OK"* ]] && ok "the image's config is where its command looks, and valid" ||
			echo "# buildah run could not check the image's config: ${out:0:200}"
		[[ -n "$ctr" ]] && buildah rm "$ctr" >/dev/null 2>&1
	else
		not_ok "the container image builds: $(tail -n 5 "$work/image.log" | tr '\n' ' ')"
	fi
else
	not_ok "buildah is installed (./akts setup installs it)"
fi

echo "1..$n"
((failures == 0))
