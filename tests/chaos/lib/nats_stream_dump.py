#!/usr/bin/env python3
"""Reads every message of a JetStream stream and prints one effect record per stored message.

A stored message is the effect of a publish at JetStream (a duplicate publish that JetStream
dropped by its Nats-Msg-Id is not stored, so it is not an effect). Output, tab separated, one
line per stored message in stream order:
    sink  message_id  producer  seq  key  t_sent  t_effect  order
t_effect is the server's store time, order the stream sequence.

No NATS client library is installed on the test machines, so this speaks the text protocol
itself: an ephemeral pull consumer (ack none) fetched in batches with no_wait. The JetStream
ack subject carries the stream sequence and the store timestamp:
    $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp ns>.<pending>
(servers with domains insert tokens at the front; the last five tokens are the same).

    nats_stream_dump.py HOST:PORT STREAM SINK_LABEL [--timeout SECONDS] [--by-sequence]

--by-sequence reads through the stream's leader instead: STREAM.INFO for the first and last
sequence, then $JS.API.STREAM.MSG.GET for every sequence in between (pipelined). A consumer is
served from the local store of whichever replica it is placed on, and after an all-nodes
kill -9 of a cluster (nats-server 2.9) a replica can stay behind the others for good, so a
consumer placed there reads a stream with messages missing; the leader's answer is the
stream's. Deleted sequences (404) are skipped.
"""
import base64
import datetime
import json
import os
import socket
import sys
import time


def main():
    hostport, stream, label = sys.argv[1], sys.argv[2], sys.argv[3]
    rest = sys.argv[4:]
    timeout = float(rest[rest.index("--timeout") + 1]) if "--timeout" in rest else 120.0
    by_sequence = "--by-sequence" in rest
    deadline = time.time() + timeout
    host, port = hostport.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    buf = bytearray()

    def read_more():
        if time.time() > deadline:
            raise SystemExit(f"nats_stream_dump: timed out after {timeout}s reading {stream}")
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise SystemExit("nats_stream_dump: server closed the connection")
        buf.extend(chunk)

    def read_line():
        while True:
            i = buf.find(b"\r\n")
            if i >= 0:
                line = bytes(buf[:i])
                del buf[:i + 2]
                return line.decode()
            read_more()

    def read_exact(n):
        while len(buf) < n + 2:
            read_more()
        data = bytes(buf[:n])
        del buf[:n + 2]
        return data

    def send(s):
        sock.sendall(s.encode() if isinstance(s, str) else s)

    def publish(subject, reply, payload):
        body = json.dumps(payload).encode()
        send(f"PUB {subject} {reply} {len(body)}\r\n".encode() + body + b"\r\n")

    def next_message():
        """(subject, reply, headers, payload) of the next MSG/HMSG; answers PINGs on the way."""
        while True:
            line = read_line()
            if line == "PING":
                send("PONG\r\n")
                continue
            if line in ("PONG", "+OK") or line.startswith("INFO "):
                continue
            if line.startswith("-ERR"):
                raise SystemExit(f"nats_stream_dump: {line}")
            parts = line.split()
            if parts[0] == "MSG":
                reply = parts[3] if len(parts) == 5 else ""
                return parts[1], reply, "", read_exact(int(parts[-1]))
            if parts[0] == "HMSG":
                reply = parts[3] if len(parts) == 6 else ""
                hlen, total = int(parts[-2]), int(parts[-1])
                data = read_exact(total)
                return parts[1], reply, data[:hlen].decode(errors="replace"), data[hlen:]
            raise SystemExit(f"nats_stream_dump: unexpected line {line!r}")

    read_line()  # INFO
    send('CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,'
         '"protocol":1,"lang":"python","version":"chaos"}\r\nPING\r\n')
    inbox = "_INBOX.chaosdump"
    send(f"SUB {inbox}.> 1\r\n")
    if by_sequence:
        dump_by_sequence(stream, label, inbox, publish, next_message)
        return
    publish(f"$JS.API.CONSUMER.CREATE.{stream}", f"{inbox}.create",
            {"stream_name": stream, "config": {"ack_policy": "none", "deliver_policy": "all",
                                               "inactive_threshold": 120 * 10**9,
                                               "mem_storage": True, "num_replicas": 1}})
    while True:
        subject, _, _, payload = next_message()
        if subject == f"{inbox}.create":
            answer = json.loads(payload)
            if "error" in answer:
                raise SystemExit(f"nats_stream_dump: consumer create: {answer['error']}")
            consumer = answer["name"]
            break
    out = sys.stdout
    while True:
        publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", f"{inbox}.next", {"batch": 1000, "no_wait": True})
        got = 0
        while True:
            subject, reply, headers, payload = next_message()
            if not reply.startswith("$JS.ACK."):
                # status message: 404 No Messages / 408 Request Timeout ends this batch
                break
            tokens = reply.split(".")
            sseq, ts_ns, pending = int(tokens[-4]), int(tokens[-2]), int(tokens[-1])
            msg_id = ""
            for h in headers.split("\r\n")[1:]:
                name, _, value = h.partition(":")
                if name.strip().lower() == "nats-msg-id":
                    msg_id = value.strip()
            p = json.loads(payload)
            out.write(f"{label}\t{msg_id}\t{p.get('p')}\t{p.get('s')}\t{p.get('k') or ''}\t{p.get('t')}\t{ts_ns / 1e9:.6f}\t{sseq}\n")
            got += 1
            if pending == 0 or got == 1000:
                break   # the batch is complete: no status message follows
        if got == 0 or pending == 0:
            # drain a trailing status message of a batch that ended exactly at the last message
            break
    out.flush()


def rfc3339_to_epoch(t):
    """2026-11-26T16:37:04.123456789Z (nanoseconds) -> seconds since the epoch."""
    t = t.rstrip("Z")
    whole, _, frac = t.partition(".")
    dt = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc)
    return dt.timestamp() + (float("0." + frac) if frac else 0.0)


def dump_by_sequence(stream, label, inbox, publish, next_message):
    def request(subject, reply, payload):
        """The JSON answer; a 503 (no leader yet: no responders) is asked again."""
        while True:
            publish(subject, reply, payload)
            while True:
                subj, _, headers, body = next_message()
                if subj == reply:
                    break
            if body:
                return json.loads(body)
            if "503" not in headers:
                raise SystemExit(f"nats_stream_dump: {subject}: empty answer {headers!r}")
            time.sleep(0.2)

    info = request(f"$JS.API.STREAM.INFO.{stream}", f"{inbox}.info", {})
    if "error" in info:
        raise SystemExit(f"nats_stream_dump: stream info: {info['error']}")
    first, last = info["state"]["first_seq"], info["state"]["last_seq"]
    out = sys.stdout
    window = 256
    seq = first
    while seq <= last:
        batch = range(seq, min(seq + window, last + 1))
        for n in batch:
            publish(f"$JS.API.STREAM.MSG.GET.{stream}", f"{inbox}.get.{n}", {"seq": n})
        answers = {}
        while len(answers) < len(batch):
            subj, _, headers, body = next_message()
            if not subj.startswith(f"{inbox}.get."):
                continue
            n = int(subj.rsplit(".", 1)[1])
            if not body:
                raise SystemExit(f"nats_stream_dump: MSG.GET {n}: no answer from the leader ({headers!r})")
            answers[n] = json.loads(body)
        for n in batch:
            a = answers[n]
            if "error" in a:
                if a["error"].get("code") == 404:
                    continue   # deleted or never stored
                raise SystemExit(f"nats_stream_dump: MSG.GET {n}: {a['error']}")
            m = a["message"]
            msg_id = ""
            hdrs = base64.b64decode(m.get("hdrs") or "").decode(errors="replace")
            for h in hdrs.split("\r\n")[1:]:
                name, _, value = h.partition(":")
                if name.strip().lower() == "nats-msg-id":
                    msg_id = value.strip()
            p = json.loads(base64.b64decode(m.get("data") or ""))
            out.write(f"{label}\t{msg_id}\t{p.get('p')}\t{p.get('s')}\t{p.get('k') or ''}\t{p.get('t')}\t"
                      f"{rfc3339_to_epoch(m['time']):.6f}\t{m['seq']}\n")
        seq += window
    out.flush()


main()
