#!/usr/bin/env python3
"""Connections that send a request one header line at a time and never finish it.

As a module: trickle(port, count, until, interval, sources, request_line) keeps `count`
connections open to 127.0.0.1:port, a share from each source address, each sending
`request_line` and then one header line every `interval` seconds; the ones the server closes
are opened again at the next line (at most 10 * count in all). Stops at monotonic time `until`
and returns (opened, still_open, longest), longest being the longest time a connection
stayed open.

As a script: trickle_clients.py PORT COUNT SECONDS MAX_LIFETIME_S
trickles COUNT connections (from 127.0.0.2..4, a line a second) at PORT for SECONDS while
fetching /healthz from 127.0.0.1 every 0.2 s. Exit 0 when every /healthz answered 200 within
2 s and the server closed each trickling connection within MAX_LIFETIME_S; 1 and the reasons
otherwise."""
import select, socket, sys, threading, time


def trickle(port, count, until, interval, sources, request_line=b"GET /healthz HTTP/1.1\r\n"):
    socks = {}   # socket -> opened at
    lifetimes = []
    opened = 0

    def top_up():
        nonlocal opened
        while len(socks) < count and opened < 10 * count and time.monotonic() < until:
            s = socket.socket()
            s.settimeout(5)
            try:
                s.bind((sources[opened % len(sources)], 0))
                opened += 1
                s.connect(("127.0.0.1", port))
                s.sendall(request_line + b"Host: slow\r\n")
                s.setblocking(False)
                socks[s] = time.monotonic()
            except OSError:
                s.close()
                lifetimes.append(0.0)

    top_up()
    next_line = time.monotonic() + interval
    n = 0
    while time.monotonic() < until:
        ready, _, _ = select.select(list(socks), [], [], max(0.0, min(next_line, until) - time.monotonic()))
        for s in ready:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:   # closed by the server (an error response before it is fine too)
                lifetimes.append(time.monotonic() - socks.pop(s))
                s.close()
        if time.monotonic() >= next_line:
            n += 1
            for s in list(socks):
                try:
                    s.send(b"X-Slow-%d: still coming\r\n" % n)
                except OSError:
                    lifetimes.append(time.monotonic() - socks.pop(s))
                    s.close()
            next_line += interval
            top_up()
    still_open = len(socks)
    for s, since in socks.items():
        lifetimes.append(time.monotonic() - since)
        s.close()
    return opened, still_open, max(lifetimes, default=0.0)


def main():
    port, count, seconds, max_lifetime = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    start = time.monotonic()
    until = start + seconds
    problems, answers = [], []
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=("127.0.0.1", 0))
                c.settimeout(2)
                c.sendall(b"GET /healthz HTTP/1.1\r\nHost: check\r\nConnection: close\r\n\r\n")
                line = c.makefile("rb").readline()
                c.close()
            except OSError as e:
                line = repr(e).encode()
            took = time.monotonic() - t0
            answers.append(took)
            if not line.startswith(b"HTTP/1.1 200") or took > 2:
                problems.append(f"/healthz at +{t0 - start:.1f}s: {line.strip()!r} in {took:.2f}s")
            stop.wait(0.2)

    prober = threading.Thread(target=probe)
    prober.start()
    opened, still_open, longest = trickle(port, count, until, 1.0, ["127.0.0.2", "127.0.0.3", "127.0.0.4"])
    stop.set()
    prober.join()
    print(f"trickling connections: {opened} opened, {still_open} open at the end, longest {longest:.1f}s; "
          f"/healthz: {len(answers)} answers, slowest {max(answers, default=0):.3f}s")
    if longest > max_lifetime:
        problems.append(f"a trickling connection stayed open {longest:.1f}s (bound {max_lifetime}s)")
    if problems:
        print(f"{len(problems)} problem(s):", *problems[:20], sep="\n  ", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
