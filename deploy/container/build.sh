#!/usr/bin/env bash
# Builds the akts container image from scratch: no base image and no registry
# (none is reachable here, and akts needs none). Its root filesystem is the
# tree `cmake --install` lays out (the static binary, the BPF objects, the
# headers admission compiles against, the example config), and nothing else:
# no shell, no package manager.
#
#   deploy/container/build.sh [OUT.tar]   (as root; default out/akts-image.tar)
#
# Needs buildah (bookworm's) and a built tree (./akts build). The image is
# committed to buildah's local storage as localhost/akts:VERSION (and :latest)
# and written as an OCI archive; `podman load -i OUT.tar` or `skopeo copy
# oci-archive:OUT.tar docker://REGISTRY/akts:VERSION` take it from there.
set -euo pipefail
source "$(dirname "$(readlink -f "$0")")/../../vm/common.sh"

out=$(realpath -m "${1:-$AKTS_ROOT/out/akts-image.tar}")
command -v buildah >/dev/null || akts_die "buildah is missing: apt-get install buildah"
[[ -x "$AKTS_BUILD/akts" ]] || akts_die "no akts binary in $AKTS_BUILD: run ./akts build"
version=$("$AKTS_BUILD/akts" --version | awk '{print $2}')
commit=$("$AKTS_BUILD/akts" --version | sed -nE 's/.*commit ([^)]*)\).*/\1/p')

root=$(mktemp -d "${TMPDIR:-/tmp}/akts-image.XXXXXX")
ctr=""
cleanup() {
	[[ -n "$ctr" ]] && buildah rm "$ctr" >/dev/null 2>&1
	rm -rf "$root"
}
trap cleanup EXIT
DESTDIR="$root" cmake --install "$AKTS_BUILD" --prefix /usr --strip >/dev/null
# The daemon's directories (the DaemonSet mounts the host's over them).
mkdir -p "$root/run/akts" "$root/var/log/akts" "$root/var/lib/akts" "$root/tmp"
chmod 1777 "$root/tmp"

ctr=$(buildah from scratch)
buildah copy --quiet "$ctr" "$root" / >/dev/null
buildah config \
	--entrypoint '["/usr/bin/akts"]' \
	--cmd 'daemon --config /etc/akts/akts.json' \
	--port 9464/tcp \
	--stop-signal SIGTERM \
	--label org.opencontainers.image.title=akts \
	--label org.opencontainers.image.description="run-time sched_ext policy switching" \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.revision="$commit" \
	"$ctr"
buildah commit --quiet --rm "$ctr" "localhost/akts:$version" >/dev/null
ctr=""
buildah tag "localhost/akts:$version" localhost/akts:latest
mkdir -p "$(dirname "$out")"
rm -f "$out"
buildah push --quiet "localhost/akts:$version" "oci-archive:$out:akts:$version" >/dev/null
akts_log "image localhost/akts:$version (commit $commit) in buildah's storage and in $out ($(du -h "$out" | cut -f1))"
