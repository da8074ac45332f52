#!/usr/bin/env python3
"""HTTP receiver for the once-relay integration tests (loopback only).

Every POST is appended to --log as one JSON line: {"id", "topic", "key", "status", "t", ...}
(t = receive time, unix seconds; "headers" = every header line as [name, value] in order,
duplicates included; "peer" = the client's port, the same for requests on one kept-alive
connection; "body" = the body as received, when it is not JSON). Behaviour for testing retries:
  --fail-first N      answer the first N requests of each Idempotency-Key with --fail-status
  --fail-status S     status for those (default 503)
  --fail-topic T      --fail-first applies to topic T only
  --retry-after V     Retry-After header sent with failures
  --fail-one-in N     answer the first request of one message in N (by its id) with --fail-status
  --dead-topic T      always answer 400 "bad order" for topic T
  --delay-ms D        sleep D ms before answering (a slow receiver)
  --hold-while PATH   answer nothing while PATH exists (at most 120 s): a hung receiver the
                      test releases by deleting PATH
The chosen port is written to --port-file once listening.
"""
import argparse, json, os, threading, time, zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--log", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--port", type=int, default=0)   # 0: any free port
ap.add_argument("--fail-first", type=int, default=0)
ap.add_argument("--fail-status", type=int, default=503)
ap.add_argument("--fail-topic")
ap.add_argument("--retry-after")
ap.add_argument("--fail-one-in", type=int, default=0)
ap.add_argument("--dead-topic")
ap.add_argument("--delay-ms", type=int, default=0)
ap.add_argument("--hold-while")
args = ap.parse_args()

lock = threading.Lock()
attempts = {}
log = open(args.log, "a", buffering=1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        mid = self.headers.get("Idempotency-Key")
        topic = self.headers.get("X-Once-Topic")
        if args.delay_ms:
            time.sleep(args.delay_ms / 1000.0)
        held_until = time.time() + 120
        while args.hold_while and os.path.exists(args.hold_while) and time.time() < held_until:
            time.sleep(0.02)
        with lock:
            attempts[mid] = attempts.get(mid, 0) + 1
            k = attempts[mid]
        status, text, extra = 200, b"ok", {}
        if args.dead_topic and topic == args.dead_topic:
            status, text = 400, b"bad order: missing customer"
        elif (k <= args.fail_first and (args.fail_topic is None or topic == args.fail_topic)) or (args.fail_one_in and k == 1 and zlib.crc32((mid or "").encode()) % args.fail_one_in == 0):
            status, text = args.fail_status, b"try later"
            if args.retry_after:
                extra["Retry-After"] = args.retry_after
        try:
            payload = json.loads(body or b"null")
        except ValueError:
            payload = None
        with lock:
            log.write(json.dumps({"id": mid, "topic": topic, "key": self.headers.get("X-Once-Key"),
                                  "status": status, "t": time.time(), "payload": payload,
                                  "ct": self.headers.get("Content-Type"), "trace": self.headers.get("traceparent"),
                                  "headers": [[k, v] for k, v in self.headers.items()], "peer": self.client_address[1],
                                  "body": None if payload is not None else body.decode(errors="replace")}) + "\n")
        self.send_response(status)
        for h, v in extra.items():
            self.send_header(h, v)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer.request_queue_size = 256
srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
