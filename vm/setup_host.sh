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
case "${1:-}" in
demo) ;;
"") PACKAGES+=("${FULL_ONLY[@]}") ;;
first) PACKAGES=("${KERNEL_TOOLS[@]}") ;;
*) akts_die "usage: vm/setup_host.sh [demo|first]" ;;
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
[[ ${1:-} == first ]] || command -v npm >/dev/null || missing+=(npm)
qemu_ok=0
[[ ${1:-} != first ]] || qemu_ok=1  # not yet
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
else
	akts_log "installing host packages: ${missing[*]} ${BACKPORTS[*]}"
fi
apt-get -q update >/dev/null
# dpkg without an fsync per file: the compilers' thousands of files unpack sooner. A machine that loses power
# mid-install may keep empty files of what was being unpacked: reinstall those by hand (apt-get install --reinstall;
# this script sees them installed).
unsafe_io=(-o Dpkg::Options::=--force-unsafe-io)
apt-get -q install -y --no-install-recommends "${unsafe_io[@]}" "${missing[@]}" >/dev/null
if [[ ${1:-} != first ]]; then
	apt-get -q install -y --no-install-recommends "${unsafe_io[@]}" -t bookworm-backports "${BACKPORTS[@]}" >/dev/null
fi
