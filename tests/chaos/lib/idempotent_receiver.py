#!/usr/bin/env python3
"""An idempotent HTTP(S) webhook receiver for the chaos suite (loopback only).

Each POST has an Idempotency-Key. The first time a key arrives the receiver performs its
effect: one line appended (and flushed) to --effects:
    http  message_id  producer  seq  key  t_sent  t_effect  order
A key already recorded (loaded from --effects at start, so a restarted receiver remembers) is
answered 200 without a second effect and counted as absorbed in --requests. Every request is
one line in --requests: "<status> <key> <absorbed 0|1>".

The fault mode is read from --mode-file before every request (the chaos schedule rewrites it):
    normal                 record, 200
    storm503 [SECONDS]     503 with Retry-After: SECONDS (default 1), no effect
    slow SECONDS           record, then sleep SECONDS before answering 200 (beyond the lease)
    reset P                with probability P close the connection with a TCP reset before
                           reading the answer (no effect)
    die_after_record       record the effect, then exit at once without answering: the relay
                           sees a broken connection and sends again; the restarted receiver
                           absorbs the duplicate by its Idempotency-Key
With --cert/--key it serves HTTPS. The port is fixed (--port) so a restart keeps the URL.
"""
import argparse
import json
import os
import random
import socket
import ssl
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--effects", required=True)
ap.add_argument("--requests", required=True)
ap.add_argument("--mode-file", required=True)
ap.add_argument("--cert")
ap.add_argument("--key")
args = ap.parse_args()

lock = threading.Lock()
seen = set()
order = 0
if os.path.exists(args.effects):
    with open(args.effects) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 8:
                seen.add(cols[1])
                order = max(order, int(cols[7]))
effects = open(args.effects, "a", buffering=1)
requests = open(args.requests, "a", buffering=1)


def current_mode():
    try:
        with open(args.mode_file) as f:
            return f.read().split()
    except OSError:
        return ["normal"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, text=b"ok", extra=()):
        self.send_response(status)
        for h, v in extra:
            self.send_header(h, v)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def do_POST(self):
        global order
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        key = self.headers.get("Idempotency-Key", "")
        mode = current_mode() or ["normal"]
        kind = mode[0]
        if kind == "storm503":
            requests.write(f"503 {key} 0\n")
            self.answer(503, b"storm", [("Retry-After", mode[1] if len(mode) > 1 else "1")])
            return
        if kind == "reset" and random.random() < float(mode[1] if len(mode) > 1 else "0.3"):
            requests.write(f"reset {key} 0\n")
            # SO_LINGER 0: close() sends a RST instead of a FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            try:
                self.connection.close()
            except OSError:
                pass
            return
        p = json.loads(body or b"{}")
        with lock:
            absorbed = key in seen
            if not absorbed:
                seen.add(key)
                order += 1
                effects.write(f"http\t{key}\t{p.get('p')}\t{p.get('s')}\t{p.get('k') or ''}\t{p.get('t')}\t{time.time():.6f}\t{order}\n")
            requests.write(f"200 {key} {1 if absorbed else 0}\n")
        if kind == "die_after_record" and not absorbed:
            os._exit(3)   # the effect is recorded, the answer never leaves
        if kind == "slow":
            time.sleep(float(mode[1] if len(mode) > 1 else "3"))
        self.answer(200)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


srv = Server(("127.0.0.1", args.port), Handler)
if args.cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
