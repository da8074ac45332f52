#!/usr/bin/env python3
"""Publish one message to JetStream and wait for its PubAck; print the PubAck JSON.
Usage: nats_publish.py PORT SUBJECT DATA [NAME=VALUE ...] (headers). Speaks the NATS text
protocol directly (HPUB with a reply subject), as nats_stream_get.py does: no NATS client
library for Python is packaged in Debian 12."""
import socket, sys

port, subject, data = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
headers = b"NATS/1.0\r\n" + b"".join(h.split("=", 1)[0].encode() + b": " + h.split("=", 1)[1].encode() + b"\r\n"
                                       for h in sys.argv[4:]) + b"\r\n"
s = socket.create_connection(("127.0.0.1", port), timeout=10)
f = s.makefile("rb")
if not f.readline().startswith(b"INFO "):
    sys.exit("not a NATS server")
s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n'
          b"SUB _INBOX.once_pub 1\r\n"
          + b"HPUB %s _INBOX.once_pub %d %d\r\n" % (subject.encode(), len(headers), len(headers) + len(data))
          + headers + data + b"\r\n")
while True:
    line = f.readline()
    if not line:
        sys.exit("connection closed before the PubAck")
    if line.startswith(b"PING"):
        s.sendall(b"PONG\r\n")
    elif line.startswith(b"-ERR"):
        sys.exit(line.decode().strip())
    elif line.startswith(b"MSG ") or line.startswith(b"HMSG "):
        parts = line.split()
        body = f.read(int(parts[-1]) + 2)[:-2]
        if line.startswith(b"HMSG "):
            sys.exit("JetStream replied with a status: " + body.decode(errors="replace"))
        print(body.decode())
        if b'"error"' in body:
            sys.exit(1)
        break
