#!/usr/bin/env python3
"""A client that holds akts mcp's credential, for clients that cannot send one.

The MCP conformance runner (npm @modelcontextprotocol/conformance 0.1.16) has no
option for request headers, and akts mcp's HTTP transport refuses every request
without `Authorization: Bearer <token>`. This proxy listens on loopback, adds
that header, and forwards each request unchanged otherwise: method, path, body
and every header the runner sent (Host and Origin included, so the server's
DNS-rebinding checks still see what the runner meant them to see); the answer
comes back with its status, headers and body.

    mcp_auth_proxy.py LISTEN_PORT UPSTREAM_PORT TOKEN_FILE
"""
import http.client
import http.server
import sys

listen_port, upstream_port, token_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
token = open(token_file).read().strip()
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "authorization"}


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            if k.lower() not in HOP:
                conn.putheader(k, v)
        conn.putheader("Authorization", f"Bearer {token}")
        conn.putheader("Content-Length", str(len(body or b"")))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_POST = do_DELETE = forward

    def log_message(self, fmt, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", listen_port), Proxy).serve_forever()
