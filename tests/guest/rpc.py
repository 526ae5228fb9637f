#!/usr/bin/env python3
"""Sends raw bytes to the akts control socket and prints the one-line answer.

  rpc.py SOCKET 'TEXT'     TEXT is sent as is, plus a newline
  rpc.py SOCKET --size N   sends an N-byte request with no newline (oversize test)
"""
import socket
import sys

path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(path)
if sys.argv[2] == "--size":
    n = int(sys.argv[3])
    payload = b'{"jsonrpc":"2.0","id":1,"method":"v1.status","params":{"pad":"' + b"x" * n
else:
    payload = sys.argv[2].encode() + b"\n"
try:
    s.sendall(payload)
except BrokenPipeError:
    pass
buf = b""
while b"\n" not in buf:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print(buf.split(b"\n")[0].decode())
