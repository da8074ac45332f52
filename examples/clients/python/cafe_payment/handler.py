"""One saga command, one transaction: the inbox record, the payment, the saga's next step.

    BEGIN
      once.receive(source, message id, topic)   false: a duplicate delivery -> skip it
      the business write (charges + ledger, or a refund)
      once.saga_reply(saga id, step, outcome, output, message id)
    COMMIT

If anything fails, the transaction rolls back whole: no payment, no inbox record (so the
redelivered command runs again), no reply. If the commit happened but the ack to the sender
did not (a crash in between), the redelivery finds the inbox record and is skipped.

The inbox deduplicates *deliveries* of one message. A saga that timed out resends its command
as a new message with the same idempotency key, so the business write is also keyed by the
command's idempotency key and a resend gets the stored reply (as docs/sagas.md asks).
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import psycopg
from psycopg.types.json import Jsonb

# The inbox source: where the commands come from (the orders database's outbox). Message ids
# are unique per source.
SOURCE = "cafe-orders"
TOPICS = ["payment.capture", "payment.refund"]


class BadCommand(Exception):
    """The command is malformed: no retry can fix it (the worker dead-letters it at once)."""


@dataclass(frozen=True)
class Command:
    id: str          # the outbox message id (a uuid), the inbox message id
    topic: str
    payload: dict
    headers: dict


def handle(conn: psycopg.Connection, cmd: Command) -> str:
    """Processes cmd in one transaction on conn (autocommit mode).

    Returns "processed" or "duplicate"; raises on failure, with nothing written.
    """
    saga_id, step = _field(cmd.payload, "saga_id"), _field(cmd.payload, "step")
    key = _field(cmd.headers, "idempotency_key")
    with conn.transaction():
        fresh = conn.execute("SELECT once.receive(%s, %s, %s)", (SOURCE, cmd.id, cmd.topic)).fetchone()[0]
        if not fresh:
            return "duplicate"
        # Captures and refunds of one saga take turns, so a refund that overtakes a resent
        # capture and the capture itself cannot both miss each other's row.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('payments:' || %s))", (saga_id,))
        if cmd.topic == "payment.capture":
            reply = _capture(conn, saga_id, key, cmd.payload.get("data") or {})
        elif cmd.topic == "payment.refund":
            reply = _refund(conn, saga_id)
        else:
            raise BadCommand(f"no handler for topic {cmd.topic}")
        output = reply.get("output")
        conn.execute("SELECT once.saga_reply(%s, %s, %s, %s, %s)",
                     (saga_id, step, reply["outcome"], Jsonb(output) if output is not None else None, cmd.id))
    return "processed"


def _field(obj: dict | None, name: str) -> str:
    value = (obj or {}).get(name)
    if not isinstance(value, str) or not value:
        raise BadCommand(f"command without {name}")
    return value


def _capture(conn: psycopg.Connection, saga_id: str, key: str, data: dict) -> dict:
    stored = conn.execute("SELECT reply FROM payments.charges WHERE idempotency_key = %s", (key,)).fetchone()
    if stored:
        return stored[0]                                    # a resent command: the same answer
    if conn.execute("SELECT 1 FROM payments.refunds WHERE saga_id = %s", (saga_id,)).fetchone():
        return {"outcome": "failed", "output": {"error": "payment already voided by a refund"}}
    try:
        amount = Decimal(str(data["amount"]))
    except (KeyError, ArithmeticError, ValueError) as err:
        raise BadCommand(f"capture without a valid amount: {err!r}") from None
    if data.get("card") == "tok_declined":
        status, reply = "declined", {"outcome": "failed", "output": {"error": "card declined"}}
    else:
        status, reply = "captured", {"outcome": "succeeded", "output": {"payment_id": f"pay-{saga_id}"}}
    conn.execute("""INSERT INTO payments.charges (idempotency_key, saga_id, amount, status, reply)
                    VALUES (%s, %s, %s, %s, %s)""", (key, saga_id, amount, status, Jsonb(reply)))
    if status == "captured":
        conn.execute("INSERT INTO payments.ledger (saga_id, entry, amount) VALUES (%s, 'capture', %s)",
                     (saga_id, amount))
    return reply


def _refund(conn: psycopg.Connection, saga_id: str) -> dict:
    charge = conn.execute("SELECT amount, status FROM payments.charges WHERE saga_id = %s FOR UPDATE",
                          (saga_id,)).fetchone()
    if charge is None:
        # Nothing captured (yet): leave a tombstone so a late capture is refused.
        conn.execute("INSERT INTO payments.refunds (saga_id, amount) VALUES (%s, 0) ON CONFLICT DO NOTHING",
                     (saga_id,))
    elif charge[1] == "captured":
        conn.execute("UPDATE payments.charges SET status = 'refunded' WHERE saga_id = %s", (saga_id,))
        conn.execute("INSERT INTO payments.ledger (saga_id, entry, amount) VALUES (%s, 'refund', %s)",
                     (saga_id, -charge[0]))
        conn.execute("INSERT INTO payments.refunds (saga_id, amount) VALUES (%s, %s)", (saga_id, charge[0]))
    return {"outcome": "compensated"}
