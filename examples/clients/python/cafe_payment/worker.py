"""The payment worker: claims payment commands from the outbox, handles each, acks it.

    python3 -m cafe_payment.worker [--conninfo "dbname=cafe"] [--name payment-worker]

The outbox delivers at least once: a command is redelivered when this worker dies between the
handler's commit and the ack, or when its lease runs out while it is slow. The handler's
once.receive turns those redeliveries into no-ops (handler.py). Failures:
  - the handler raised: its transaction rolled back (nothing written). A permanent error (a
    malformed command, or a 4xx SQLSTATE such as ON402 "saga not found", by sqlstate.py) is
    dead-lettered at once (once.dead: see once.dead_letters); anything else is nacked and
    retried after --retry-after, up to the topic's max_attempts.
Wake-ups: LISTEN once_outbox, plus a poll every --poll seconds (a lost wake-up costs latency).

Environment: libpq's PG* variables; CAFE_PAYMENT_CRASH=after_commit (tests: SIGKILL itself
after a handler committed and before the ack, to show the redelivery being skipped).
"""
from __future__ import annotations

import argparse
import os
import select
import signal

import psycopg

from .handler import TOPICS, BadCommand, Command, handle
from .sqlstate import http_status, is_permanent

_stopping = False


def _stop(signum, frame):  # noqa: ARG001 (signal handler signature)
    global _stopping
    _stopping = True


def process(conn: psycopg.Connection, name: str, retry_after: str, cmd: Command) -> str:
    saga = cmd.payload.get("saga_id") if isinstance(cmd.payload, dict) else None
    try:
        outcome = handle(conn, cmd)
    except Exception as err:  # noqa: BLE001 (every failure is nacked or dead-lettered)
        status = 400 if isinstance(err, BadCommand) else http_status(err)
        if isinstance(err, BadCommand) or is_permanent(err):
            reason = f"{status}: {err}"
            conn.execute("SELECT once.dead(%s, %s, %s)", (name, cmd.id, reason))
            outcome = "dead"
        else:
            conn.execute("SELECT once.nack(%s, %s, %s, %s::interval)",
                         (name, cmd.id, f"{status}: {err}", retry_after))
            outcome = "retry"
        print(f"{outcome} {cmd.id} {cmd.topic} {saga}: {err}", flush=True)
        return outcome
    if os.environ.get("CAFE_PAYMENT_CRASH") == "after_commit":
        print(f"crashing after the commit of {cmd.id}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    conn.execute("SELECT once.ack(%s, %s)", (name, [cmd.id]))
    print(f"{outcome} {cmd.id} {cmd.topic} {saga}", flush=True)
    return outcome


def run(conninfo: str, name: str, batch: int, lease: str, retry_after: str, poll: float) -> None:
    with psycopg.connect(conninfo, autocommit=True, application_name=name) as conn, \
         psycopg.connect(conninfo, autocommit=True, application_name=f"{name} listener") as listener:
        listener.execute("LISTEN once_outbox")
        print(f"worker {name} started", flush=True)
        while not _stopping:
            rows = conn.execute(
                "SELECT id::text, topic, payload, headers FROM once.claim(%s, %s, %s::interval, %s)",
                (name, batch, lease, TOPICS)).fetchall()
            for row in rows:
                process(conn, name, retry_after, Command(*row))
            if not rows:
                # Sleep until a NOTIFY arrives or the poll interval passes; the no-op query
                # reads (and discards) the notifications.
                select.select([listener.fileno()], [], [], poll)
                listener.execute("SELECT 1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conninfo", default="", help="libpq conninfo (default: PG* environment variables)")
    parser.add_argument("--name", default="payment-worker", help="lease holder in once.claim; unique per worker")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--lease", default="30 seconds", help="claim lease (a PostgreSQL interval)")
    parser.add_argument("--retry-after", default="5 seconds", help="retry delay after a failure")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between claims without a wake-up")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    run(args.conninfo, args.name, args.batch, args.lease, args.retry_after, args.poll)


if __name__ == "__main__":
    main()
