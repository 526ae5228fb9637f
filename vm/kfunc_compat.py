#!/usr/bin/env python3
"""Whether akts's BPF objects can load on a kernel, from the kernel's BTF and the objects' own.

libbpf resolves each kfunc an object declares by its essential name (the last ___flavour dropped) and
refuses the load when a non-weak declaration's prototype differs from the kernel's; a weak one is left
unresolved, and the code behind bpf_ksym_exists() takes its fallback (bpf/akts_kfunc_compat.bpf.h).
A kfunc the kernel marks KF_IMPLICIT_ARGS but whose BTF kept the trailing `aux` and has no <name>_impl
(some 7.2.x builds) cannot be called at all: the verifier refuses it. So a kernel fits when every kfunc
the objects need (declared non-weak, or listed in REQUIRED below) resolves and is callable there.

  kfunc_compat.py BPFTOOL VMLINUX OBJECT...     prints what does not fit (and each fallback taken, on
                                                stderr); exit 1 when a required kfunc does not fit
  kfunc_compat.py --signature BPFTOOL OBJECT... prints the objects' kfunc declarations, one a line (a
                                                memo of a kernel's fit is keyed to them)
  kfunc_compat.py --uncallable BPFTOOL VMLINUX  prints the kernel's sched_ext kfuncs that cannot be called"""
import re, subprocess, sys

# Declared weak by the kernel's headers (for kernels before the kfunc existed) but called with no fallback.
REQUIRED = {"bpf_iter_scx_dsq_new", "bpf_iter_scx_dsq_next", "bpf_iter_scx_dsq_destroy"}
MODIFIERS = {"TYPEDEF", "CONST", "VOLATILE", "RESTRICT", "TYPE_TAG"}


def essential(name):
    """The name libbpf looks up: the last ___flavour dropped (libbpf's bpf_core_essential_name_len)."""
    for i in range(len(name) - 5, -1, -1):
        if name[i] != "_" and name[i + 1:i + 4] == "___" and name[i + 4] != "_":
            return name[:i + 1]
    return name


class Btf:
    def __init__(self, bpftool, path):
        text = subprocess.run([bpftool, "btf", "dump", "file", path], capture_output=True, text=True,
                              check=True).stdout
        self.types, self.funcs, cur = {}, {}, None
        for line in text.splitlines():
            m = re.match(r"\[(\d+)\] (\w+) '([^']*)'(.*)", line)
            if m:
                tid, kind, name, rest = int(m.group(1)), m.group(2), m.group(3), m.group(4)
                ref = re.search(r"\btype_id=(\d+)", rest)
                size = re.search(r"\bsize=(\d+)", rest)
                link = re.search(r"\blinkage=(\w+)", rest)
                cur = {"kind": kind, "name": name, "ref": int(ref.group(1)) if ref else None,
                       "size": int(size.group(1)) if size else None, "params": [],
                       "ret": int(re.search(r"ret_type_id=(\d+)", rest).group(1)) if kind == "FUNC_PROTO" else None}
                self.types[tid] = cur
                if kind == "FUNC":
                    self.funcs.setdefault(name, []).append((cur["ref"], link.group(1) if link else ""))
            elif cur is not None and line.startswith("\t") and cur["kind"] == "FUNC_PROTO":
                pm = re.match(r"\t'([^']*)' type_id=(\d+)", line)
                if pm:
                    cur["params"].append((pm.group(1), int(pm.group(2))))

    def shape(self, tid, depth=0):
        """A type as libbpf's compatibility check sees it: kinds and sizes, names of pointed-to structs."""
        while tid and self.types.get(tid, {}).get("kind") in MODIFIERS:
            tid = self.types[tid]["ref"]
        if not tid:
            return "void"
        t = self.types[tid]
        if t["kind"] in ("INT", "ENUM", "ENUM64"):
            return f"int{t['size']}"
        if t["kind"] == "PTR":
            return "ptr" if depth else "ptr(" + self.shape(t["ref"], 1) + ")"
        if t["kind"] in ("STRUCT", "UNION", "FWD"):
            return t["name"] or t["kind"].lower()
        return t["kind"].lower()

    def signature(self, proto):
        p = self.types[proto]
        return (self.shape(p["ret"]), tuple(self.shape(t) for _, t in p["params"]))

    def uncallable(self, name):
        """A KF_IMPLICIT_ARGS kfunc whose BTF kept the trailing aux and has no _impl: the verifier refuses it."""
        params = self.types[self.funcs[name][0][0]]["params"]
        return bool(params) and params[-1][0] == "aux" and self.shape(params[-1][1]) == "ptr(bpf_prog_aux)" \
            and f"{name}_impl" not in self.funcs

    def pretty(self, name, proto):
        p = self.types[proto]
        return f"{name}({', '.join(n for n, _ in p['params'])})"


def declared(bpftool, objects):
    """{essential name: [(declared name, weak, signature)]} over the objects' extern functions."""
    out = {}
    for o in objects:
        weak = set()
        for line in subprocess.run(["readelf", "-sW", o], capture_output=True, text=True, check=True).stdout.splitlines():
            f = line.split()
            if len(f) >= 8 and f[6] == "UND" and f[4] == "WEAK":
                weak.add(f[7])
        btf = Btf(bpftool, o)
        for name, decls in btf.funcs.items():
            for proto, linkage in decls:
                if linkage == "extern":
                    entry = (name, name in weak, btf.signature(proto))
                    group = out.setdefault(essential(name), [])
                    if entry not in group:
                        group.append(entry)
    return out


def main():
    args = sys.argv[1:]
    if args[:1] == ["--signature"] and len(args) >= 3:
        for ess, group in sorted(declared(args[1], args[2:]).items()):
            for name, weak, sig in sorted(group):
                print(ess, name, "weak" if weak else "global", sig)
        return
    if args[:1] == ["--uncallable"] and len(args) == 3:
        kernel = Btf(args[1], args[2])
        for name in sorted(kernel.funcs):
            if re.match(r"(__)?scx_|bpf_iter_scx_", name) and not name.endswith("_impl") and kernel.uncallable(name):
                print(name)
        return
    if len(args) < 3:
        sys.exit(__doc__)
    bpftool, vmlinux, objects = args[0], args[1], args[2:]
    kernel = Btf(bpftool, vmlinux)
    bad = 0
    for ess, group in sorted(declared(bpftool, objects).items()):
        if ess not in kernel.funcs:
            why = "missing there"
        else:
            proto = kernel.funcs[ess][0][0]
            if kernel.uncallable(ess):
                why = f"cannot be called there ({kernel.pretty(ess, proto)} kept its implicit aux and has no _impl)"
            elif any(sig == kernel.signature(proto) for _, _, sig in group):
                continue
            else:
                why = f"takes {kernel.pretty(ess, proto)} there"
        required = ess in REQUIRED or any(not weak for _, weak, _ in group)
        if required:
            print(f"{ess}: {why}")
            bad += 1
        else:
            print(f"{ess}: {why}; the objects fall back", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
