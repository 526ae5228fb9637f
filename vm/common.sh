# Shared settings for the set-up and guest scripts; sourced, never run.
# shellcheck shell=bash

AKTS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Everything downloaded or built outside the source tree lives here, so a
# fresh clone reuses it and `git clean` never throws it away.
AKTS_CACHE="${AKTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/akts}"
AKTS_BUILD="${AKTS_BUILD:-$AKTS_ROOT/build}"

# The sched_ext kernel the project is pinned to. Backports move on: when the
# registry has dropped this version, fetch_kernel.sh falls back (loudly) to the
# newest cloud kernel whose config enables sched_ext.
AKTS_KERNEL_SUITE="trixie-backports"
AKTS_KERNEL_VERSION="7.3.4+deb13-cloud-amd64"
AKTS_KERNEL_PKG="linux-binary-unsigned-${AKTS_KERNEL_VERSION}"
AKTS_SOURCE_PKG="linux-source-7.3"

akts_log() { printf '\033[1;34m[akts]\033[0m %s\n' "$*" >&2; }
akts_warn() { printf '\033[1;33m[akts] WARNING:\033[0m %s\n' "$*" >&2; }
akts_die() {
	printf '\033[1;31m[akts] error:\033[0m %s\n' "$*" >&2
	exit 1
}

# The Debian archive this machine already uses, so no host name is hard-coded.
akts_debian_mirror() {
	if [[ -n "${AKTS_DEBIAN_MIRROR:-}" ]]; then
		echo "$AKTS_DEBIAN_MIRROR"
		return
	fi
	local m
	m=$(grep -hoE '(https?|file)://[^ ]+/debian/?( |$)' /etc/apt/sources.list \
		/etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -v security | head -n1 | tr -d ' ')
	[[ -n "$m" ]] || akts_die "cannot find a Debian mirror in /etc/apt; set AKTS_DEBIAN_MIRROR"
	echo "${m%/}"
}

# apt-get against a private state under the cache, so suites other than the
# host's (trixie-backports, sid) can be downloaded without touching the system.
akts_private_apt() {
	local state="$AKTS_CACHE/apt"
	mkdir -p "$state/lists/partial" "$state/archives/partial"
	apt-get -q -o Dir::Etc::sourcelist="$state/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$state/lists" -o Dir::Cache::archives="$state/archives" \
		-o Acquire::Check-Valid-Until=false -o APT::Get::List-Cleanup=0 "$@"
}

akts_private_apt_cache() {
	local state="$AKTS_CACHE/apt"
	apt-cache -o Dir::Etc::sourcelist="$state/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$state/lists" "$@"
}

akts_private_apt_init() {
	local state="$AKTS_CACHE/apt" mirror
	mirror=$(akts_debian_mirror)
	mkdir -p "$state"
	cat >"$state/sources.list.new" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie-backports main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main
EOF
	mv "$state/sources.list.new" "$state/sources.list"
	# Lists older than a day are refreshed; otherwise a warm run stays offline.
	if [[ -z "$(find "$state/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null | head -n1)" ]]; then
		akts_log "refreshing the private package lists (trixie-backports, trixie, sid)"
		akts_private_apt update >/dev/null
	fi
}
