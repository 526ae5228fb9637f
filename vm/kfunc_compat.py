#!/usr/bin/env python3
"""Whether akts's BPF objects, built against the pinned kernel's BTF, can load on another kernel: every kfunc
they call (weak ones included) must have the same parameters there, or be absent (a weak one the code checks
with bpf_ksym_exists). A kernel whose kfunc takes other parameters (7.2.6's scx_bpf_pick_idle_cpu still takes
an explicit `aux`, before the `_impl` variants) makes libbpf refuse the object. Prints each difference; exit 1
when a kfunc akts needs differs, 0 when the kernel fits.

  kfunc_compat.py BPFTOOL PINNED_VMLINUX OTHER_VMLINUX OBJECT..."""
import re, subprocess, sys


def funcs(bpftool, vmlinux):
    text = subprocess.run([bpftool, "btf", "dump", "file", vmlinux], capture_output=True, text=True, check=True).stdout
    names, protos, cur = {}, {}, None
    for line in text.splitlines():
        m = re.match(r"\[(\d+)\] (\w+) '([^']*)'(.*)", line)
        if m:
            tid, kind, name, rest = m.groups()
            cur = None
            if kind == "FUNC":
                names[name] = int(re.search(r"type_id=(\d+)", rest).group(1))
            elif kind == "FUNC_PROTO":
                cur = protos.setdefault(int(tid), [])
        elif cur is not None and line.startswith("\t"):
            cur.append(line.strip().split("'")[1])
    return {n: protos.get(t) for n, t in names.items()}


def used(objects):
    out = {}
    for o in objects:
        syms = subprocess.run(["readelf", "-sW", o], capture_output=True, text=True, check=True).stdout
        for line in syms.splitlines():
            f = line.split()
            if len(f) >= 8 and f[6] == "UND" and f[7]:
                out.setdefault(f[7].split("___")[0], f[4])  # the name libbpf looks up; GLOBAL or WEAK
    return out


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    bpftool, pinned, other, objects = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    a, b = funcs(bpftool, pinned), funcs(bpftool, other)
    bad = 0
    for name, bind in sorted(used(objects).items()):
        if name not in a:
            continue  # not a kernel function (a kconfig extern, a map)
        if name in b and b[name] != a[name]:
            print(f"{name}: takes ({', '.join(b[name])}) there, ({', '.join(a[name])}) in the pinned kernel")
            bad += 1
        elif name not in b and bind != "WEAK":
            print(f"{name}: missing there, and akts calls it unconditionally")
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
