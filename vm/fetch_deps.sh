#!/usr/bin/env bash
# Fetches the libraries Debian 12 does not ship in a form a static binary can
# use, pinned by version and checksum, into $AKTS_CACHE/deps:
#   deps/include/httplib.h   cpp-httplib 0.11.4, the single header (bookworm's
#                            version; its package splits the header into a
#                            shared library, so it comes from the same
#                            release's source); kept for checkouts that use it
#   deps/httplib-0.11.4-split/{include/httplib.h,src/httplib.cc}
#                            the same header split by the release's own
#                            split.py into declarations and the implementation,
#                            which akts compiles once (not in each of the ten
#                            files that include it); a folder of its own, so
#                            that a checkout of either kind finds its own pair
set -euo pipefail
source "$(dirname "$0")/common.sh"

OUT="$AKTS_CACHE/deps"
HTTPLIB_TARBALL="cpp-httplib_0.11.4+ds.orig.tar.xz"
HTTPLIB_SHA256="8b1a5df569003b6a4f24c68489bbda5c64aec94697bdc9ebba5d79408b2ae7eb"
SPLIT="$OUT/httplib-0.11.4-split"
stamp="$OUT/stamp-httplib-$HTTPLIB_SHA256"
split_stamp="$SPLIT/stamp-$HTTPLIB_SHA256"
[[ -f "$stamp" && -f "$split_stamp" ]] && exit 0

mkdir -p "$OUT/include" "$OUT/src"
mirror=$(akts_debian_mirror)
url="${mirror%/}/pool/main/c/cpp-httplib/$HTTPLIB_TARBALL"
if [[ ! -f "$OUT/src/$HTTPLIB_TARBALL" ]]; then
	akts_log "fetching cpp-httplib 0.11.4 (an HTTP client and server) from $url"
	curl -fsSL --retry 3 -o "$OUT/src/$HTTPLIB_TARBALL" "$url" || akts_die "cannot download $url"
fi
echo "$HTTPLIB_SHA256  $OUT/src/$HTTPLIB_TARBALL" | sha256sum -c --quiet - ||
	akts_die "$HTTPLIB_TARBALL: checksum mismatch (expected $HTTPLIB_SHA256)"
work=$(mktemp -d "$OUT/src/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cpp-httplib"
tar -xJf "$OUT/src/$HTTPLIB_TARBALL" -C "$work/cpp-httplib" --strip-components=1 --wildcards '*/httplib.h' '*/split.py' '*/LICENSE'
# The single header, always (a cache once given the split header there gets the single one back).
cp "$work/cpp-httplib/httplib.h" "$OUT/include/httplib.h"
touch "$stamp"
(cd "$work/cpp-httplib" && /usr/bin/python3 ./split.py -o "$work/out" >/dev/null) || akts_die "cpp-httplib's split.py failed"
rm -rf "$SPLIT.tmp" && mkdir -p "$SPLIT.tmp/include" "$SPLIT.tmp/src"
cp "$work/out/httplib.h" "$SPLIT.tmp/include/httplib.h"
cp "$work/out/httplib.cc" "$SPLIT.tmp/src/httplib.cc"
cp "$work/cpp-httplib/LICENSE" "$SPLIT.tmp/LICENSE"
touch "$SPLIT.tmp/stamp-$HTTPLIB_SHA256"
rm -rf "$SPLIT" && mv "$SPLIT.tmp" "$SPLIT"
