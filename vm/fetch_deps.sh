#!/usr/bin/env bash
# Fetches the header-only libraries Debian 12 does not ship in a form a static
# binary can use, pinned by version and checksum, into $AKTS_CACHE/deps:
#   deps/include/httplib.h   cpp-httplib 0.11.4 (bookworm's version; its package
#   deps/src/httplib.cc      splits the header into a shared library, so the
#                            header comes from the same release's source), split
#                            by the release's own split.py into declarations and
#                            the implementation, which akts compiles once (in one
#                            file, not in each of the ten that include it)
set -euo pipefail
source "$(dirname "$0")/common.sh"

OUT="$AKTS_CACHE/deps"
HTTPLIB_TARBALL="cpp-httplib_0.11.4+ds.orig.tar.xz"
HTTPLIB_SHA256="8b1a5df569003b6a4f24c68489bbda5c64aec94697bdc9ebba5d79408b2ae7eb"
stamp="$OUT/stamp-httplib-split-$HTTPLIB_SHA256"
[[ -f "$stamp" ]] && exit 0

mkdir -p "$OUT/include" "$OUT/src"
mirror=$(akts_debian_mirror)
url="${mirror%/}/pool/main/c/cpp-httplib/$HTTPLIB_TARBALL"
if [[ ! -f "$OUT/src/$HTTPLIB_TARBALL" ]]; then
	akts_log "fetching cpp-httplib 0.11.4 (an HTTP client and server) from $url"
	curl -fsSL --retry 3 -o "$OUT/src/$HTTPLIB_TARBALL" "$url" || akts_die "cannot download $url"
fi
echo "$HTTPLIB_SHA256  $OUT/src/$HTTPLIB_TARBALL" | sha256sum -c --quiet - ||
	akts_die "$HTTPLIB_TARBALL: checksum mismatch (expected $HTTPLIB_SHA256)"
rm -rf "$OUT/src/split" && mkdir -p "$OUT/src/split"
tar -xJf "$OUT/src/$HTTPLIB_TARBALL" -C "$OUT/src/split" --wildcards '*/httplib.h' '*/split.py' '*/LICENSE'
(cd "$OUT"/src/split/*/ && /usr/bin/python3 ./split.py -o "$OUT/src/split/out" >/dev/null) || akts_die "cpp-httplib's split.py failed"
cp "$OUT/src/split/out/httplib.h" "$OUT/include/httplib.h"
cp "$OUT/src/split/out/httplib.cc" "$OUT/src/httplib.cc"
touch "$stamp"
