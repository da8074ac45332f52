#!/usr/bin/env python3
"""Two attacks on once-console at once, while a logged-in admin keeps using it.

Usage: console_siege.py PORT SESSION_COOKIE ATTACK_S MAX_SLOW_LIFETIME_S PAGE_BOUND_S

- Guessers: 100 concurrent clients from 127.0.0.2 post wrong passwords for "admin" to
  /login (each with a valid login form token).
- Slow clients (trickle_clients.py): 300 connections, a third each from 127.0.0.3, .4 and
  .5, each sending a request line and then one header line every 2 s, never finishing the
  request; every 2 s the ones the server closed are opened again (at most 3000 in all).
- The admin (from 127.0.0.1, with SESSION_COOKIE) fetches / and /healthz every 50 ms.
Both attacks stop by themselves after ATTACK_S seconds (a guesser also after 40 answers).
Succeeds (exit 0, a summary line) when every admin page and every /healthz answered 200
within PAGE_BOUND_S seconds, and the server closed every slow connection within
MAX_SLOW_LIFETIME_S seconds of its opening. Otherwise exits 1 with the reasons. Prints the
guessers' status counts ("guess statuses: 401=10 429=...") for the caller to check."""
import collections, http.client, os, re, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trickle_clients import trickle  # noqa: E402

port, cookie = int(sys.argv[1]), sys.argv[2]
attack_s, max_lifetime, page_bound = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
HOST = "127.0.0.1"
start = time.monotonic()
attack_end = start + attack_s
stop = threading.Event()
lock = threading.Lock()
guess_status = collections.Counter()
problems = []


def request(source, method, path, body=None, headers=None, timeout=10):
    c = http.client.HTTPConnection(HOST, port, timeout=timeout, source_address=(source, 0))
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.getheaders(), r.read()
    finally:
        c.close()


def guesser(i):
    token = cookie_value = None
    answers = 0
    while answers < 40 and time.monotonic() < attack_end:
        try:
            if token is None:
                status, headers, body = request("127.0.0.2", "GET", "/login")
                m = re.search(rb'name=csrf value="([0-9a-f]{64})"', body)
                for k, v in headers:
                    if k.lower() == "set-cookie" and v.startswith("once_console_login="):
                        cookie_value = v.split(";")[0]
                if not m or not cookie_value:
                    continue
                token = m.group(1).decode()
            form = f"csrf={token}&user=admin&secret=wrong-{i}-{time.monotonic_ns()}"
            status, _, _ = request("127.0.0.2", "POST", "/login", body=form,
                                   headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie_value})
            answers += 1
            with lock:
                guess_status[str(status)] += 1
        except OSError as e:   # refused by the per-address limit, or reset: again, a little later
            with lock:
                guess_status[type(e).__name__] += 1
            stop.wait(0.05)


def slow_clients():
    opened, still_open, longest = trickle(port, 300, attack_end, 2.0, ["127.0.0.3", "127.0.0.4", "127.0.0.5"],
                                          b"POST /login HTTP/1.1\r\n")
    with lock:
        slow_summary.append(f"slow connections: {opened} opened, {still_open} still open at the end, "
                            f"longest {longest:.1f}s")
        if longest > max_lifetime:
            problems.append(f"a slow connection stayed open {longest:.1f}s (bound {max_lifetime}s); "
                            f"{still_open} still open when the attack ended")


slow_summary = []
times = {"/": [], "/healthz": []}


def admin():
    while not stop.is_set():
        for path in ("/", "/healthz"):
            t0 = time.monotonic()
            try:
                status, _, body = request("127.0.0.1", "GET", path, headers={"Cookie": cookie}, timeout=page_bound + 10)
                took = time.monotonic() - t0
                ok = status == 200 and (path != "/" or b'id=attention' in body)
                detail = f"HTTP {status}"
            except OSError as e:
                took, ok, detail = time.monotonic() - t0, False, repr(e)
            times[path].append(took)
            if not ok or took > page_bound:
                with lock:
                    problems.append(f"admin GET {path} at +{t0 - start:.1f}s: {detail} in {took:.3f}s")
        stop.wait(0.05)


threads = [threading.Thread(target=guesser, args=(i,)) for i in range(100)]
threads.append(threading.Thread(target=slow_clients))
probe = threading.Thread(target=admin)
probe.start()
for t in threads:
    t.start()
for t in threads:
    t.join()
stop.set()
probe.join()

print("guess statuses: " + " ".join(f"{k}={v}" for k, v in sorted(guess_status.items())))
print(*slow_summary)
for path, ts in times.items():
    print(f"admin {path}: {len(ts)} requests, slowest {max(ts, default=0):.3f}s")
if not times["/"] or not times["/healthz"]:
    problems.append("the admin made no request")
if problems:
    print(f"{len(problems)} problem(s):", *problems[:20], sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"ok: the admin's pages answered within {page_bound}s throughout the attack")
