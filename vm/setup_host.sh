#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build akts and run the guest.
# Idempotent: packages already present are skipped, so a warm run takes a second.
# With "demo": only what ./akts demo needs (no unit tests, fuzzing, packaging or linting: about a third of the
# packages a full set-up unpacks); a later ./akts test installs the rest.
set -euo pipefail
source "$(dirname "$0")/common.sh"

PACKAGES=(
	build-essential cmake ninja-build ccache pkg-config file curl ca-certificates
	clang-19 llvm-19 libelf-dev zlib1g-dev libzstd-dev libssl-dev libcap-dev
	nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libncurses-dev
	debootstrap busybox-static cpio zstd xz-utils e2fsprogs python3 python3-matplotlib
)
# The unit tests (GoogleTest), fuzzing (clang's runtime), the package's checks (help2man, lintian, yamllint) and
# the container image (buildah): ./akts test's and ./akts package's, not the demo's.
FULL_ONLY=(libclang-rt-19-dev libgtest-dev googletest help2man lintian yamllint python3-yaml buildah)
# With "first": only the few tools vm/fetch_kernel.sh needs (it runs beside the rest of the packages' install).
KERNEL_TOOLS=(zstd xz-utils file ca-certificates)
# With "compiler": what the code that needs no kernel (akts_core) compiles with, and cpp-httplib's split.py runs
# with, so that its build (about two thirds of the C++ build) runs beside the rest of the packages' install. Its
# configure needs no BPF toolchain.
COMPILER=(build-essential cmake ninja-build ccache pkg-config curl ca-certificates xz-utils python3
	nlohmann-json3-dev libspdlog-dev libfmt-dev libssl-dev libelf-dev zlib1g-dev libzstd-dev)
case "${1:-}" in
demo) ;;
"") PACKAGES+=("${FULL_ONLY[@]}") ;;
first) PACKAGES=("${KERNEL_TOOLS[@]}") ;;
compiler) PACKAGES=("${COMPILER[@]}") ;;
*) akts_die "usage: vm/setup_host.sh [demo|first|compiler]" ;;
esac
# bookworm's qemu 7.2 hit an "Oops: int3" while a scheduler was enabled; the
# backported 10.x hits it far more rarely (once in a clean-clone run, on 7.2.6:
# ./akts test runs such a pass once more).
BACKPORTS=(qemu-system-x86)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# npm fetches the MCP clients (vm/fetch_npm.sh); a Node.js that ships its own npm is enough.
partial=0
[[ ${1:-} != first && ${1:-} != compiler ]] || partial=1
((partial)) || command -v npm >/dev/null || missing+=(npm)
qemu_ok=$partial  # the partial phases install no qemu
if command -v qemu-system-x86_64 >/dev/null; then
	major=$(qemu-system-x86_64 --version | sed -nE 's/.*version ([0-9]+)\..*/\1/p')
	((major >= 9)) && qemu_ok=1
fi

if ((${#missing[@]} == 0 && qemu_ok)); then
	exit 0
fi

[[ $(id -u) -eq 0 ]] || akts_die "installing packages needs root (missing: ${missing[*]} ${BACKPORTS[*]})"
export DEBIAN_FRONTEND=noninteractive
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	mirror=$(akts_debian_mirror)
	akts_log "adding bookworm-backports ($mirror) to apt's sources"
	echo "deb $mirror bookworm-backports main" >/etc/apt/sources.list.d/akts-bookworm-backports.list
fi
if [[ ${1:-} == first ]]; then
	akts_log "installing what the kernel's download needs: ${missing[*]}"
elif [[ ${1:-} == compiler ]]; then
	akts_log "installing the C++ compiler and the headers the kernel-free code needs: ${missing[*]}"
else
	akts_log "installing host packages: ${missing[*]} ${BACKPORTS[*]}"
fi
# The lists once per set-up: ./akts's phases (first, compiler, then the rest) share AKTS_SETUP_ID, and a later phase
# finds the stamp of an earlier one. Run alone, or in another set-up, it updates them.
stamp="$AKTS_CACHE/apt-lists-updated"
if [[ -z ${AKTS_SETUP_ID:-} || $(cat "$stamp" 2>/dev/null) != "$AKTS_SETUP_ID" ]]; then
	apt-get -q update >/dev/null
	[[ -z ${AKTS_SETUP_ID:-} ]] || { mkdir -p "$AKTS_CACHE" && echo "$AKTS_SETUP_ID" >"$stamp"; }
fi
# dpkg without an fsync per file: the compilers' thousands of files unpack sooner. A machine that loses power
# mid-install may keep empty files of what was being unpacked: reinstall those by hand (apt-get install --reinstall;
# this script sees them installed).
unsafe_io=(-o Dpkg::Options::=--force-unsafe-io)
apt-get -q install -y --no-install-recommends "${unsafe_io[@]}" "${missing[@]}" >/dev/null
if ((!partial)); then
	apt-get -q install -y --no-install-recommends "${unsafe_io[@]}" -t bookworm-backports "${BACKPORTS[@]}" >/dev/null
fi
