#!/usr/bin/env bash
# Fetches the checkers written by others that judge akts's output, into
# $AKTS_CACHE/checkers (the guest tests get it with --file):
#   checkers/promtool              Prometheus's own `promtool check metrics` (bookworm's prometheus package;
#                                  installing that package would start a server, so only the binary is
#                                  extracted with dpkg-deb -x)
#   checkers/prometheus            the Prometheus server of the same package, which tests/guest/t_prometheus.sh
#                                  runs against a daemon with the dashboard's queries and the alerting rules
#   checkers/python/prometheus_client  the Prometheus Python client, whose OpenMetrics parser is strict
#                                      (with decorator.py, which Debian's package depends on)
# Both come through apt (signed by the archive), versions recorded in checkers/VERSIONS.
set -euo pipefail
source "$(dirname "$0")/common.sh"

OUT="$AKTS_CACHE/checkers"
PKGS=(prometheus python3-prometheus-client python3-decorator)
versions=""
for p in "${PKGS[@]}"; do
	v=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
	[[ -n "$v" && "$v" != "(none)" ]] || akts_die "apt knows no $p: run apt-get update (bookworm's main has it)"
	versions+="$p=$v "
done
[[ -f "$OUT/VERSIONS" && "$(cat "$OUT/VERSIONS")" == "$versions" && -x "$OUT/promtool" && -x "$OUT/prometheus" ]] && exit 0

akts_log "fetching promtool, prometheus and the Prometheus Python client ($versions)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/akts-checkers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 0777 "$tmp"  # apt's sandbox user downloads into it
(cd "$tmp" && apt-get download -q "${PKGS[@]}" >/dev/null 2>&1) || akts_die "apt-get download ${PKGS[*]} failed"
for d in "$tmp"/*.deb; do dpkg-deb -x "$d" "$tmp/root"; done
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp/python"
install -m 0755 "$tmp/root/usr/bin/promtool" "$OUT.tmp/promtool"
install -m 0755 "$tmp/root/usr/bin/prometheus" "$OUT.tmp/prometheus"
cp -r "$tmp/root/usr/lib/python3/dist-packages/prometheus_client" "$tmp/root/usr/lib/python3/dist-packages/decorator.py" \
	"$OUT.tmp/python/"
"$OUT.tmp/promtool" --version >/dev/null 2>&1 || akts_die "the extracted promtool does not run"
"$OUT.tmp/prometheus" --version >/dev/null 2>&1 || akts_die "the extracted prometheus does not run"
echo -n "$versions" >"$OUT.tmp/VERSIONS"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
akts_log "checkers ready in $OUT ($(du -sh "$OUT" | cut -f1))"
