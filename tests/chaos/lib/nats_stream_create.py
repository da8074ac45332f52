#!/usr/bin/env python3
"""Creates a JetStream stream with N replicas over the NATS text protocol (no client library
is installed on the test machines).   nats_stream_create.py HOST:PORT STREAM SUBJECTS REPLICAS"""
import json
import socket
import sys
import time

hostport, stream, subjects, replicas = sys.argv[1:5]
host, port = hostport.rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=30)
s.recv(65536)  # INFO
cfg = json.dumps({"name": stream, "subjects": subjects.split(","), "storage": "file",
                  "num_replicas": int(replicas), "duplicate_window": 120 * 10**9}).encode()
s.sendall(b'CONNECT {"verbose":false,"headers":true,"protocol":1}\r\nSUB _INBOX.create 1\r\n'
          + b"PUB $JS.API.STREAM.CREATE.%s _INBOX.create %d\r\n%s\r\n" % (stream.encode(), len(cfg), cfg))
buf = b""
deadline = time.time() + 30
while b"\r\n" not in buf.partition(b"MSG ")[2].partition(b"\r\n")[2] and time.time() < deadline:
    buf += s.recv(65536)
    if b"PING\r\n" in buf:
        s.sendall(b"PONG\r\n")
answer = buf.partition(b"MSG ")[2].partition(b"\r\n")[2].partition(b"\r\n")[0]
reply = json.loads(answer or b"{}")
if "error" in reply or "config" not in reply:
    sys.exit(f"nats_stream_create: {answer!r}")
