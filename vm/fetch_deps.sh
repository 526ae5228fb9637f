#!/usr/bin/env bash
# Fetches the header-only libraries Debian 12 does not ship in a form a static
# binary can use, pinned by version and checksum, into $AKTS_CACHE/deps:
#   deps/include/httplib.h   cpp-httplib 0.11.4 (bookworm's version; its package
#                            splits the header into a shared library, so the
#                            single header comes from the same release's source)
set -euo pipefail
source "$(dirname "$0")/common.sh"

OUT="$AKTS_CACHE/deps"
HTTPLIB_TARBALL="cpp-httplib_0.11.4+ds.orig.tar.xz"
HTTPLIB_SHA256="8b1a5df569003b6a4f24c68489bbda5c64aec94697bdc9ebba5d79408b2ae7eb"
stamp="$OUT/stamp-httplib-$HTTPLIB_SHA256"
[[ -f "$stamp" ]] && exit 0

mkdir -p "$OUT/include" "$OUT/src"
mirror=$(akts_debian_mirror)
url="${mirror%/}/pool/main/c/cpp-httplib/$HTTPLIB_TARBALL"
akts_log "fetching cpp-httplib 0.11.4 (header-only HTTP client and server) from $url"
curl -fsSL --retry 3 -o "$OUT/src/$HTTPLIB_TARBALL" "$url" || akts_die "cannot download $url"
echo "$HTTPLIB_SHA256  $OUT/src/$HTTPLIB_TARBALL" | sha256sum -c --quiet - ||
	akts_die "$HTTPLIB_TARBALL: checksum mismatch (expected $HTTPLIB_SHA256)"
tar -xJf "$OUT/src/$HTTPLIB_TARBALL" -C "$OUT/src" --wildcards '*/httplib.h' '*/LICENSE'
cp "$OUT"/src/*/httplib.h "$OUT/include/httplib.h"
touch "$stamp"
