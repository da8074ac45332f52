#!/usr/bin/env python3
"""Print one stored JetStream message, headers included, as JSON: {"subject", "headers": [[name,
value], ...], "data"}. Usage: nats_stream_get.py PORT STREAM SEQ. Speaks the NATS text protocol
directly (the JetStream API request $JS.API.STREAM.MSG.GET) because no NATS client library for
Python is packaged in Debian 12; the monitoring endpoint shows counts, not headers."""
import base64, json, socket, sys

port, stream, seq = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
f = s.makefile("rb")
if not f.readline().startswith(b"INFO "):
    sys.exit("not a NATS server")
req = json.dumps({"seq": seq}).encode()
s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n'
          b"SUB _INBOX.once_get 1\r\n"
          + b"PUB $JS.API.STREAM.MSG.GET.%s _INBOX.once_get %d\r\n" % (stream.encode(), len(req)) + req + b"\r\n")
while True:
    line = f.readline()
    if not line:
        sys.exit("connection closed before the reply")
    if line.startswith(b"PING"):
        s.sendall(b"PONG\r\n")
    elif line.startswith(b"-ERR"):
        sys.exit(line.decode().strip())
    elif line.startswith(b"MSG ") or line.startswith(b"HMSG "):
        parts = line.split()
        body = f.read(int(parts[-1]) + 2)[:-2]
        if line.startswith(b"HMSG "):   # a status reply (e.g. no responders): headers then body
            sys.exit("JetStream replied with a status: " + body.decode(errors="replace"))
        break
reply = json.loads(body)
if "error" in reply:
    sys.exit("JetStream: " + json.dumps(reply["error"]))
m = reply["message"]
headers = []
raw = base64.b64decode(m.get("hdrs", "")).decode(errors="replace")
for hl in raw.split("\r\n")[1:]:   # the first line is "NATS/1.0"
    if ":" in hl:
        k, v = hl.split(":", 1)
        headers.append([k, v.strip()])
print(json.dumps({"subject": m["subject"], "headers": headers,
                  "data": base64.b64decode(m.get("data", "")).decode(errors="replace")}))
