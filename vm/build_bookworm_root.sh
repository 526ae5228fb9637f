#!/usr/bin/env bash
# A fresh Debian 12 root (debootstrap --variant=minbase bookworm), as a tarball
# cached in $AKTS_CACHE/bookworm-root.tar, for installing and removing the
# package where nothing else was ever installed (tests/host/packaging.sh).
# Prints the tarball's path. About a minute the first time.
set -euo pipefail
source "$(dirname "$0")/common.sh"

out="$AKTS_CACHE/bookworm-root.tar"
if [[ ! -f "$out" ]]; then
	[[ $(id -u) -eq 0 ]] || akts_die "debootstrap needs root"
	root=$(mktemp -d "${TMPDIR:-/tmp}/akts-bookworm.XXXXXX")
	trap 'rm -rf "$root"' EXIT
	akts_log "debootstrap a fresh Debian 12 (minbase) for the package's install test (about a minute)" >&2
	debootstrap --variant=minbase bookworm "$root" "$(akts_debian_mirror)" >"$root.log" 2>&1 ||
		{ tail -n 20 "$root.log" >&2; akts_die "debootstrap bookworm failed"; }
	rm -f "$root.log"
	rm -rf "$root"/var/cache/apt/archives/*.deb
	tar -cf "$out.tmp" -C "$root" . && mv "$out.tmp" "$out"
fi
echo "$out"
