#!/usr/bin/env python3
"""Whether akts's BPF objects can load on a kernel, from the kernel's BTF and the objects' own.

libbpf resolves each kfunc an object declares by its essential name (the last ___flavour dropped) and
refuses the load when a non-weak declaration's prototype differs from the kernel's; a weak one is left
unresolved, and the code behind bpf_ksym_exists() takes its fallback (bpf/akts_kfunc_compat.bpf.h, and
compat.bpf.h's chains of older names). A kfunc the kernel marks KF_IMPLICIT_ARGS but whose BTF kept the
trailing `aux` and has no <name>_impl (some 7.2.x builds) cannot be called at all: the verifier refuses
it. So a kernel fits when every kfunc the objects need resolves and is callable there: each non-weak one,
each weak one called without a test (REQUIRED), at least one of each chain of fallbacks (CHAINS), and
each kernel variable (a typed ksym such as runqueues) exists. The other weak ones have a fallback of
their own that needs no kfunc.

  kfunc_compat.py [--quiet] BPFTOOL VMLINUX OBJECT...  prints what does not fit (and, unless --quiet,
                                                each fallback taken, on stderr); exit 1 when the kernel
                                                does not fit, 2 on an error
  kfunc_compat.py --signature BPFTOOL OBJECT... prints the objects' kfunc declarations, one a line (a
                                                memo of a kernel's fit is keyed to them)
  kfunc_compat.py --uncallable BPFTOOL VMLINUX  prints the kernel's sched_ext kfuncs that cannot be called"""
import re, subprocess, sys

# Declared weak by the kernel's headers (for kernels before they existed) but called with no test.
REQUIRED = {"bpf_iter_scx_dsq_new", "bpf_iter_scx_dsq_next", "bpf_iter_scx_dsq_destroy", "bpf_iter_num_new",
            "bpf_iter_num_next", "bpf_iter_num_destroy", "scx_bpf_nr_cpu_ids", "scx_bpf_get_online_cpumask",
            "scx_bpf_get_possible_cpumask", "scx_bpf_put_cpumask"}
# compat.bpf.h's chains, newest first: the last is called without a test, so one of each must be callable.
CHAINS = [("scx_bpf_dsq_insert___v2", "scx_bpf_dsq_insert", "scx_bpf_dispatch"),
          ("scx_bpf_dsq_move_to_local___v2", "scx_bpf_dsq_move_to_local", "scx_bpf_consume"),
          ("__scx_bpf_dsq_insert_vtime", "scx_bpf_dsq_insert_vtime", "scx_bpf_dispatch_vtime"),
          ("scx_bpf_dsq_move", "scx_bpf_dispatch_from_dsq"),
          ("scx_bpf_dsq_move_set_slice", "scx_bpf_dispatch_from_dsq_set_slice")]
MODIFIERS = ("TYPEDEF", "CONST", "VOLATILE", "RESTRICT", "TYPE_TAG")


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
        self.types, self.funcs, self.vars, cur = {}, {}, {}, None
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
                elif kind == "VAR":
                    self.vars[name] = link.group(1) if link else ""
            elif cur is not None and line.startswith("\t") and cur["kind"] == "FUNC_PROTO":
                pm = re.match(r"\t'([^']*)' type_id=(\d+)", line)
                if pm:
                    cur["params"].append((pm.group(1), int(pm.group(2))))

    def shape(self, tid, depth=0):
        """A type as libbpf's __bpf_core_types_are_compat sees it: the kind after modifiers and typedefs
        (enum and enum64 alike; integers of any size alike; structs whatever their name), pointers
        followed."""
        while tid and self.types.get(tid, {}).get("kind") in MODIFIERS:
            tid = self.types[tid]["ref"]
        if not tid:
            return "void"
        t = self.types[tid]
        kind = {"ENUM64": "ENUM"}.get(t["kind"], t["kind"])
        if kind == "PTR":
            return "ptr(" + (self.shape(t["ref"], depth + 1) if depth < 8 else "?") + ")"
        return kind.lower()

    def names(self, tid):
        """The pointed-to struct's name, for messages only."""
        while tid and self.types.get(tid, {}).get("kind") in MODIFIERS + ("PTR",):
            tid = self.types[tid]["ref"]
        return self.types.get(tid, {}).get("name", "") if tid else ""

    def signature(self, proto):
        p = self.types[proto]
        return (self.shape(p["ret"]), tuple(self.shape(t) for _, t in p["params"]))

    def uncallable(self, name):
        """A KF_IMPLICIT_ARGS kfunc whose BTF kept the trailing aux and has no _impl: the verifier refuses it."""
        params = self.types[self.funcs[name][0][0]]["params"]
        return bool(params) and params[-1][0] == "aux" and self.shape(params[-1][1]) == "ptr(struct)" \
            and self.names(params[-1][1]) == "bpf_prog_aux" and f"{name}_impl" not in self.funcs

    def pretty(self, name, proto):
        p = self.types[proto]
        return f"{name}({', '.join(n for n, _ in p['params'])})"


def declared(bpftool, objects):
    """({essential name: [(declared name, weak, signature)]} over the objects' extern functions,
    {the kernel variables they name (typed ksyms): weak})."""
    out, variables = {}, {}
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
        for name, linkage in btf.vars.items():
            # kconfig values (CONFIG_*, LINUX_KERNEL_VERSION) are libbpf's to fill, not the kernel BTF's
            if linkage == "extern" and not re.match(r"(CONFIG_|LINUX_)", name):
                variables[name] = variables.get(name, True) and name in weak
    return out, variables


def fit(kernel, ess, group):
    """None if a declaration of ess resolves to a callable kfunc there, else why not."""
    if ess not in kernel.funcs:
        return "missing there"
    proto = kernel.funcs[ess][0][0]
    if kernel.uncallable(ess):
        return f"cannot be called there ({kernel.pretty(ess, proto)} kept its implicit aux and has no _impl)"
    if any(sig == kernel.signature(proto) for _, _, sig in group):
        return None
    return f"takes {kernel.pretty(ess, proto)} there"


def main():
    args = sys.argv[1:]
    quiet = args[:1] == ["--quiet"]
    args = args[1:] if quiet else args
    if args[:1] == ["--signature"] and len(args) >= 3:
        funcs, variables = declared(args[1], args[2:])
        for ess, group in sorted(funcs.items()):
            for name, weak, sig in sorted(group):
                print(ess, name, "weak" if weak else "global", sig)
        for name, weak in sorted(variables.items()):
            print(name, name, "weak" if weak else "global", "variable")
        return 0
    if args[:1] == ["--uncallable"] and len(args) == 3:
        kernel = Btf(args[1], args[2])
        for name in sorted(kernel.funcs):
            if re.match(r"(__)?scx_|bpf_iter_scx_", name) and not name.endswith("_impl") and kernel.uncallable(name):
                print(name)
        return 0
    if len(args) < 3 or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    bpftool, vmlinux, objects = args[0], args[1], args[2:]
    kernel = Btf(bpftool, vmlinux)
    funcs, variables = declared(bpftool, objects)
    bad = []
    chained = {name for chain in CHAINS for name in chain}
    for ess, group in sorted(funcs.items()):
        why = fit(kernel, ess, group)
        if why is None:
            continue
        if ess in REQUIRED or any(not weak for _, weak, _ in group):
            bad.append(f"{ess}: {why}")
        elif not quiet:
            fallback = "the next of its chain" if ess in chained else "its fallback"
            print(f"{ess}: {why}; the objects take {fallback}", file=sys.stderr)
    for chain in CHAINS:
        used = [name for name in chain if name in funcs]
        if used and all(fit(kernel, name, funcs[name]) is not None for name in used):
            bad.append(f"none of {', '.join(used)} can be called there")
    for name, weak in sorted(variables.items()):
        if name not in kernel.vars and not weak:
            bad.append(f"{name}: no such kernel variable there")
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, subprocess.CalledProcessError, KeyError, ValueError) as e:
        print(f"kfunc_compat.py: {e}", file=sys.stderr)
        sys.exit(2)
