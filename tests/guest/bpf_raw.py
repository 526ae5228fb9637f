#!/usr/bin/env python3
"""Writes one 64-bit word into a BPF array map's value straight through the bpf(2) syscall, around
akts and its checks (the guest tests' stand-in for any other root process holding the map):

    bpf_raw.py MAP_NAME KEY WORD_INDEX VALUE     e.g. bpf_raw.py akts_params 1 0 10000000000

It finds the map by name among all loaded maps, reads the entry, replaces word WORD_INDEX (little
endian u64) and writes the entry back. Prints the word's old value. Needs root (CAP_BPF/CAP_SYS_ADMIN).
"""
import ctypes
import os
import struct
import sys

SYS_BPF = 321  # x86-64
BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM = 1, 2
BPF_MAP_GET_NEXT_ID, BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 12, 14, 15

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def bpf(cmd, attr):
    r = libc.syscall(SYS_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf cmd {cmd}: {os.strerror(e)}")
    return r


class Attr(ctypes.Structure):  # the union bpf_attr, as raw words; 128 bytes cover every command here
    _fields_ = [("w", ctypes.c_uint64 * 16)]


def find_map(name):
    """-> (fd, value_size, max_entries) of the first loaded map called name."""
    next_id = 0
    while True:
        a = Attr()
        a.w[0] = next_id  # start_id
        try:
            bpf(BPF_MAP_GET_NEXT_ID, a)
        except OSError:
            raise SystemExit(f"bpf_raw: no loaded map is called {name}")
        next_id = a.w[0] >> 32  # next_id follows start_id
        a = Attr()
        a.w[0] = next_id  # map_id
        try:
            fd = bpf(BPF_MAP_GET_FD_BY_ID, a)
        except OSError:
            continue  # gone meanwhile
        info = ctypes.create_string_buffer(128)
        a = Attr()
        a.w[0] = fd | (ctypes.sizeof(info) << 32)  # bpf_fd, info_len
        a.w[1] = ctypes.addressof(info)
        bpf(BPF_OBJ_GET_INFO_BY_FD, a)
        _type, _id, _ksz, vsz, entries, _flags = struct.unpack_from("<6I", info.raw, 0)
        mname = info.raw[24:40].split(b"\0", 1)[0].decode()
        if mname == name:
            return fd, vsz, entries
        os.close(fd)


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    name, key, word, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    fd, vsz, entries = find_map(name)
    if not 0 <= key < entries or not 0 <= word < vsz // 8 or not 0 <= value < 1 << 64:
        raise SystemExit(f"bpf_raw: {name} has {entries} entries of {vsz} bytes; key {key} word {word} is outside")
    k = ctypes.c_uint32(key)
    v = ctypes.create_string_buffer(vsz)
    a = Attr()
    a.w[0] = fd
    a.w[1] = ctypes.addressof(k)
    a.w[2] = ctypes.addressof(v)
    bpf(BPF_MAP_LOOKUP_ELEM, a)
    old = struct.unpack_from("<Q", v.raw, word * 8)[0]
    struct.pack_into("<Q", v, word * 8, value)
    a.w[3] = 0  # BPF_ANY
    bpf(BPF_MAP_UPDATE_ELEM, a)
    print(old)


if __name__ == "__main__":
    main()
