#!/usr/bin/env bash
# Fetches the MCP clients written by others that test `akts mcp` (the official
# TypeScript SDK and conformance runner), pinned by tests/mcp/package-lock.json
# (versions and integrity hashes), into $AKTS_CACHE/npm/node_modules. The guest
# has no network: build_image.sh carries them into the image (/opt/akts/mcp).
# Only downloads here (no install scripts run); the guest's Node.js runs them.
set -euo pipefail
source "$(dirname "$0")/common.sh"

OUT="$AKTS_CACHE/npm"
SRC="$AKTS_ROOT/tests/mcp"
key=$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -c1-16)
[[ -f "$OUT/stamp-$key" && -d "$OUT/node_modules/@modelcontextprotocol/sdk" ]] && exit 0
command -v npm >/dev/null || akts_die "npm is missing (the MCP clients come from the npm registry): apt-get install npm"

rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
cp "$SRC/package.json" "$SRC/package-lock.json" "$OUT.tmp/"
akts_log "fetching the MCP SDK and conformance runner from the npm registry (tests/mcp/package-lock.json)"
(cd "$OUT.tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
	{ tail -n 20 "$OUT.tmp/npm.log"; akts_die "npm ci failed (log above)"; }
touch "$OUT.tmp/stamp-$key"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
akts_log "MCP clients ready in $OUT/node_modules ($(du -sh "$OUT/node_modules" | cut -f1))"
