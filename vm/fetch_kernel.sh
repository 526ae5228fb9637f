#!/usr/bin/env bash
# Downloads Debian's sched_ext kernel (image, modules, source) into the cache and
# unpacks what the project needs. With no argument: the pinned kernel into
# $AKTS_CACHE/kernel. With VERSION (e.g. 7.2.6+deb13-cloud-amd64, or "oldest" /
# "newest": the registry's oldest or newest linux-binary-unsigned-*-cloud-amd64,
# as it lists them today; one whose config lacks sched_ext is refused) another kernel into
# $AKTS_CACHE/kernels/<version>, checked against the registry's index (no pin);
# prints that directory. Either way, into the kernel's directory:
#   $AKTS_CACHE/kernel/vmlinux        uncompressed ELF, booted directly (PVH) and the BTF source for vmlinux.h
#   $AKTS_CACHE/kernel/config         the kernel's config (copied into the guest as /boot/config-<ver>)
#   $AKTS_CACHE/kernel/modules/       the .ko files the initrd needs (virtio_blk and its dependencies)
#   $AKTS_CACHE/kernel/src/           tools/{lib/bpf,bpf/bpftool,sched_ext,...} from linux-source
#   $AKTS_CACHE/kernel/release        the kernel release string
# Idempotent: a stamp file records what was unpacked.
set -euo pipefail
source "$(dirname "$0")/common.sh"

# Pinned SHA-256 of the .deb files for $AKTS_KERNEL_VERSION (from the registry's index).
declare -A PINNED_SHA256=(
	[linux-binary-unsigned]=4dd49c9172767a16a8ebb3c61fb993e4c2e8deef082b64b38878b74b9638f704
	[linux-base]=e08baa43706ba6e8daff58029b039f46beecfb3b3750c6fa0d6d5ca508a46a43
	[linux-modules]=359f04c363b7d3c5f9ce999ccb7351e00cc8eec0a30d6bc1cda37734987fc43d
	[linux-source]=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3
)

DEBS="$AKTS_CACHE/debs"
mkdir -p "$DEBS"
requested="${1:-}"
if [[ -z "$requested" ]]; then
	KDIR="$AKTS_CACHE/kernel"
	[[ -f "$KDIR/stamp" && -f "$KDIR/vmlinux" ]] && exit 0
	akts_private_apt_init
	version="$AKTS_KERNEL_VERSION"
	pinned=1
else
	case "$requested" in
	oldest | newest)
		# Resolved against the registry at most once a day (they come and go) and again whenever akts's kfunc
		# declarations change; the answer kept in kernels/<oldest|newest> (the kernel's directory, then a hash
		# of the declarations): the first of the list, in that order, whose config enables sched_ext and whose
		# BTF gives akts every kfunc it needs (vm/kfunc_compat.py: some 7.2.x builds cannot call create_dsq or
		# kick_cpu at all). A candidate is judged on its vmlinux, before its modules and source are fetched.
		objs=("$AKTS_BUILD"/bpf/akts_dispatcher.bpf.o "$AKTS_BUILD"/bpf/akts_*.bpf.o)
		[[ -f "${objs[0]}" && -x "$AKTS_CACHE/toolchain/bin/bpftool" ]] ||
			akts_die "$requested: build akts first (./akts setup): the choice checks its BPF objects against each kernel"
		decls=$({
			python3 "$AKTS_ROOT/vm/kfunc_compat.py" --signature "$AKTS_CACHE/toolchain/bin/bpftool" "${objs[@]}"
			cat "$AKTS_ROOT/vm/kfunc_compat.py"
		} | sha256sum | cut -c1-16)
		[[ ${PIPESTATUS[0]:-0} == 0 && -n $decls ]] || akts_die "$requested: cannot read the kfuncs akts's objects declare"
		memo="$AKTS_CACHE/kernels/$requested"
		if [[ -n "$(find "$memo" -mmin -1440 2>/dev/null)" && "$(sed -n 2p "$memo")" == "$decls" &&
			-f "$(head -n1 "$memo")/stamp" ]]; then
			head -n1 "$memo"
			exit 0
		fi
		akts_private_apt_init
		listed=$(akts_private_apt_cache search '^linux-binary-unsigned-.*-cloud-amd64$' |
			sed -E 's/^linux-binary-unsigned-([^ ]+) .*/\1/' | sort -V)
		[[ $requested == newest ]] && listed=$(tac <<<"$listed")
		for v in $listed; do
			# Exit 3: fetched as far as its vmlinux, which does not fit (the reasons on stdout).
			rc=0
			dir=$(AKTS_KFUNC_OBJECTS=$(printf '%s\n' "${objs[@]}") bash "$0" "$v") || rc=$?
			if ((rc == 0)); then
				why=$(python3 "$AKTS_ROOT/vm/kfunc_compat.py" --quiet "$AKTS_CACHE/toolchain/bin/bpftool" \
					"$dir/vmlinux" "${objs[@]}") || rc=$?
				if ((rc == 0)); then
					mkdir -p "$AKTS_CACHE/kernels" && printf '%s\n%s\n' "$dir" "$decls" >"$memo"
					echo "$dir"
					exit 0
				fi
				((rc == 1)) || akts_die "vm/kfunc_compat.py failed on $dir/vmlinux (exit $rc)"
				dir=$why rc=3
			fi
			((rc == 3)) && akts_warn "$v: akts cannot run there: ${dir//$'\n'/; }"
			akts_warn "$v: not usable; trying the next"
		done
		# Nothing usable listed now: the kernel found before, if it still fits this build.
		if [[ -f "$memo" && -f "$(head -n1 "$memo")/stamp" ]] && python3 "$AKTS_ROOT/vm/kfunc_compat.py" --quiet \
			"$AKTS_CACHE/toolchain/bin/bpftool" "$(head -n1 "$memo")/vmlinux" "${objs[@]}" >/dev/null; then
			akts_warn "the registry gave no usable kernel: keeping the $requested one found before, $(head -n1 "$memo")"
			head -n1 "$memo"
			exit 0
		fi
		akts_die "no linux-binary-unsigned-*-cloud-amd64 in the registry enables sched_ext and fits akts"
		;;
	*)
		[[ "$requested" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?\+[a-z0-9.~]+-cloud-amd64$ ]] ||
			akts_die "--kernel: '$requested' is not a cloud kernel version such as $AKTS_KERNEL_VERSION (or oldest, newest)"
		version=$requested
		;;
	esac
	KDIR="$AKTS_CACHE/kernels/$version"
	[[ $version == "$AKTS_KERNEL_VERSION" ]] && KDIR="$AKTS_CACHE/kernel" && bash "$0" >&2
	if [[ -f "$KDIR/stamp" && -f "$KDIR/vmlinux" ]]; then
		echo "$KDIR"
		exit 0
	fi
	akts_private_apt_init
	akts_private_apt_cache show "linux-binary-unsigned-$version" >/dev/null 2>&1 ||
		akts_die "the registry has no linux-binary-unsigned-$version (./akts vm --kernel list shows what it has)"
	pinned=0
fi
mkdir -p "$KDIR"

if ((pinned)) && ! akts_private_apt_cache show "linux-binary-unsigned-$version" >/dev/null 2>&1; then
	pinned=0
	akts_warn "the pinned kernel $version is no longer in the registry; falling back to the newest cloud kernel there"
	version=$(akts_private_apt_cache search '^linux-binary-unsigned-.*-cloud-amd64$' |
		sed -E 's/^linux-binary-unsigned-([^ ]+) .*/\1/' | sort -V | tail -n1)
	[[ -n "$version" ]] || akts_die "no linux-binary-unsigned-*-cloud-amd64 in the registry"
	akts_warn "using $version: figures are not comparable with those taken on $AKTS_KERNEL_VERSION"
fi
upstream="${version%%+*}"
series="${upstream%.*}"

# Downloads one package and checks it against the pin (or the index, when unpinned).
fetch_deb() {
	local kind="$1" pkg="$2" line url file size sum
	# Run from an empty folder: apt prints no URI for a file already in the cwd.
	line=$(cd "$AKTS_CACHE/apt" && akts_private_apt download --print-uris "$pkg" | tail -n1)
	[[ -n "$line" ]] || akts_die "cannot resolve $pkg in the registry"
	read -r url file size sum <<<"$line"
	url="${url//\'/}"
	sum="${sum#SHA256:}"
	if ((pinned)) && [[ "${PINNED_SHA256[$kind]}" != "$sum" ]]; then
		akts_die "$pkg: the registry's checksum $sum differs from the pinned ${PINNED_SHA256[$kind]}"
	fi
	if [[ ! -f "$DEBS/$file" ]] || ! echo "$sum  $DEBS/$file" | sha256sum -c --quiet - 2>/dev/null; then
		akts_log "downloading $file ($((size / 1048576)) MiB)"
		(cd "$DEBS" && akts_private_apt download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
	fi
	echo "$sum  $DEBS/$file" | sha256sum -c --quiet - || akts_die "$file: checksum mismatch"
	echo "$DEBS/$file"
}

image_deb=$(fetch_deb linux-binary-unsigned "linux-binary-unsigned-$version")
base_deb=$(fetch_deb linux-base "linux-base-$version")

rm -rf "$KDIR.tmp" && mkdir -p "$KDIR.tmp/x"
dpkg-deb -x "$image_deb" "$KDIR.tmp/x"
dpkg-deb -x "$base_deb" "$KDIR.tmp/x"
release=$(basename "$(dirname "$(find "$KDIR.tmp/x" -name 'vmlinuz*' | head -n1)")")
[[ -n "$release" ]] || akts_die "no vmlinuz in $image_deb"
config="$KDIR.tmp/x/usr/lib/modules/$release/config"
[[ -f "$config" ]] || akts_die "no kernel config in $base_deb"
grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$config" || akts_die "$release does not enable sched_ext"
grep -q '^CONFIG_DEBUG_INFO_BTF=y' "$config" || akts_die "$release has no BTF"
cp "$config" "$KDIR.tmp/config"
echo "$release" >"$KDIR.tmp/release"

# The bzImage carries the uncompressed ELF as a zstd stream; booting that ELF
# directly skips the in-guest decompression and it holds .BTF for vmlinux.h.
vmlinuz=$(find "$KDIR.tmp/x" -name 'vmlinuz*' | head -n1)
offset=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$vmlinuz" | head -n1 | cut -d: -f1)
[[ -n "$offset" ]] || akts_die "no zstd stream in $vmlinuz"
tail -c +"$((offset + 1))" "$vmlinuz" | zstd -dqc >"$KDIR.tmp/vmlinux" 2>/dev/null || true # bytes after the stream upset zstd
file "$KDIR.tmp/vmlinux" 2>/dev/null | grep -q ELF || head -c 4 "$KDIR.tmp/vmlinux" | grep -q ELF ||
	akts_die "could not extract vmlinux from $vmlinuz"

# Asked by the oldest/newest choice: the rest (the source is large) only for a kernel akts can run on.
if [[ -n "${AKTS_KFUNC_OBJECTS:-}" ]]; then
	mapfile -t objs <<<"$AKTS_KFUNC_OBJECTS" # one path a line
	rc=0
	python3 "$AKTS_ROOT/vm/kfunc_compat.py" --quiet "$AKTS_CACHE/toolchain/bin/bpftool" "$KDIR.tmp/vmlinux" "${objs[@]}" ||
		rc=$?
	if ((rc != 0)); then
		rm -rf "$KDIR.tmp"
		rmdir "$KDIR" 2>/dev/null || true # made above, still empty
		((rc == 1)) || akts_die "vm/kfunc_compat.py failed on $release's vmlinux (exit $rc)"
		exit 3
	fi
fi
modules_deb=$(fetch_deb linux-modules "linux-modules-$version")
source_deb=$(fetch_deb linux-source "linux-source-$series")

mkdir -p "$KDIR.tmp/m"
dpkg-deb -x "$modules_deb" "$KDIR.tmp/m"
mkdir -p "$KDIR.tmp/modules"
for mod in virtio_blk; do
	ko=$(find "$KDIR.tmp/m" -name "$mod.ko*" | head -n1)
	[[ -n "$ko" ]] || akts_die "$mod not found in $modules_deb"
	case "$ko" in
	*.xz) xz -dc "$ko" >"$KDIR.tmp/modules/$mod.ko" ;;
	*.zst) zstd -dqc "$ko" >"$KDIR.tmp/modules/$mod.ko" ;;
	*) cp "$ko" "$KDIR.tmp/modules/$mod.ko" ;;
	esac
done

akts_log "unpacking tools/ from $(basename "$source_deb")"
mkdir -p "$KDIR.tmp/s" "$KDIR.tmp/src"
dpkg-deb --fsys-tarfile "$source_deb" | tar -x -C "$KDIR.tmp/s" --wildcards '*.tar.xz'
tarball=$(find "$KDIR.tmp/s" -name 'linux-source-*.tar.xz' | head -n1)
tar -xJf "$tarball" -C "$KDIR.tmp/src" --strip-components=1 \
	--wildcards '*/tools/lib' '*/tools/bpf' '*/tools/sched_ext' '*/tools/include' '*/tools/scripts' \
	'*/tools/build' '*/tools/arch' '*/scripts/bpf_doc.py' '*/kernel/bpf/disasm.*' \
	'*/include/uapi' '*/arch/x86/include/uapi' '*/Makefile' '*/scripts/Makefile.include' 2>/dev/null ||
	tar -xJf "$tarball" -C "$KDIR.tmp/src" --strip-components=1 --wildcards '*/tools' '*/kernel/bpf/disasm.*' '*/scripts'
rm -rf "$KDIR.tmp/x" "$KDIR.tmp/m" "$KDIR.tmp/s"
date -u +%FT%TZ >"$KDIR.tmp/stamp"
echo "$version pinned=$pinned" >>"$KDIR.tmp/stamp"
rm -rf "$KDIR" && mv "$KDIR.tmp" "$KDIR"
akts_log "kernel $release ready in $KDIR"
[[ -n "$requested" ]] && echo "$KDIR"
exit 0
