#!/usr/bin/env python3
"""Hold slow clients against an HTTP server, then check that a real request still gets through.

Usage: slow_clients.py PORT N DEADLINE_S CLOSE_DEADLINE_S
Opens N TCP connections to 127.0.0.1:PORT; half send nothing, half send an unfinished request
(a request line and one header, then silence: "slowloris"). While all N are open it sends
GET /healthz five times, one after another, each on a new connection, and requires an HTTP
status line within DEADLINE_S seconds each. Then it waits up to CLOSE_DEADLINE_S for the server
to close every slow connection (the per-connection time bound). Exit 0 and "ok ..." on success,
1 with the reason otherwise."""
import select, socket, sys, time

port, n, deadline, close_deadline = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
slow = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if i % 2:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: slow\r\n")
    slow.append(s)

for attempt in range(5):
    t0 = time.monotonic()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=deadline)
        c.settimeout(deadline)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: check\r\nConnection: close\r\n\r\n")
        line = c.makefile("rb").readline()
        c.close()
    except OSError as e:
        sys.exit(f"/healthz attempt {attempt + 1} with {n} slow clients open: {e!r} after {time.monotonic() - t0:.2f}s")
    if not line.startswith(b"HTTP/1.1 "):
        sys.exit(f"/healthz attempt {attempt + 1} with {n} slow clients open: no status line ({line!r}) after {time.monotonic() - t0:.2f}s")
    answered = f"{line.decode().strip()} in {time.monotonic() - t0:.3f}s"

# The server must close the slow connections itself (EOF or reset), within the bound.
end = time.monotonic() + close_deadline
open_ = list(slow)
while open_ and time.monotonic() < end:
    ready, _, _ = select.select(open_, [], [], max(0.0, end - time.monotonic()))
    for s in ready:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:   # closed by the server (an error response before the close is fine)
            open_.remove(s)
            s.close()
if open_:
    sys.exit(f"{len(open_)} of {n} slow connections still open after {close_deadline}s")
print(f"ok: last /healthz {answered}; all {n} slow connections closed by the server")
