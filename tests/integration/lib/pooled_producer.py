#!/usr/bin/env python3
"""Producers through a transaction pool (PgBouncer pool_mode=transaction), with psycopg 3.

  pooled_producer.py SRC_CONNINFO DST_CONNINFO TAG ROUNDS CLIENTS          documented settings
  pooled_producer.py --control SRC_CONNINFO                                 prepare_threshold=0

With the documented setting (prepare_threshold=None: no server-side prepared statements),
CLIENTS connections, reused for every round, each round at once (behind a barrier):
  - once.run on one key per round (scope 'pool', key TAG-r): the command inserts one row into
    pool_charges; exactly one caller runs it, every duplicate gets its stored response;
  - once.send of one message per client (topic pool.TAG);
  - once.receive of one event id per round: exactly one caller gets true and records its effect
    in pool_effects in the same transaction;
  - once.deliver into DST of one message id per round: 'processed' once, 'duplicate' for the
    rest (the subscribed handler inserts into relay_received).
Any error or broken guarantee: exit 1. Prints a JSON summary. The shell test checks the
databases afterwards.

--control runs the same kind of traffic with prepare_threshold=0 (psycopg prepares every
statement) and prints how many transactions failed: through a transaction pool a statement
prepared on one server session is missing on the next (26000) or clashes (42P05).
"""
import json
import sys
import threading
import uuid

import psycopg

errors = []
lock = threading.Lock()


def err(msg):
    with lock:
        errors.append(msg)


def all_at_once(conns, fn):
    """fn(i, conn) for every connection, in threads released together; returns the results."""
    barrier = threading.Barrier(len(conns))
    out = [None] * len(conns)

    def run(i):
        barrier.wait()
        try:
            out[i] = fn(i, conns[i])
        except Exception as e:  # noqa: BLE001 - every failure is a test failure
            err(f"client {i}: {type(e).__name__}: {e}")
            conns[i].rollback()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(conns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def documented(src, dst, tag, rounds, clients):
    srcs = [psycopg.connect(src, prepare_threshold=None) for _ in range(clients)]
    dsts = [psycopg.connect(dst, prepare_threshold=None) for _ in range(clients)]
    runs = sends = receives = delivers = 0
    for r in range(rounds):
        key = f"{tag}-{r}"

        def run(i, c):
            row = c.execute(
                "SELECT replayed, response FROM once.run('pool', %s, %s::jsonb, $$"
                " INSERT INTO pool_charges (tag, round) VALUES ($1->>'tag', ($1->>'round')::int)"
                " RETURNING jsonb_build_object('charge', id) $$)",
                (key, json.dumps({"tag": tag, "round": r})),
            ).fetchone()
            c.commit()
            return row

        answers = all_at_once(srcs, run)
        if None not in answers:
            ran = [a for a in answers if not a[0]]
            if len(ran) != 1:
                err(f"once.run {key}: {len(ran)} callers ran the command")
            if len({json.dumps(a[1], sort_keys=True) for a in answers}) != 1:
                err(f"once.run {key}: different responses {answers}")
            runs += len(answers)

        def send(i, c):
            mid = c.execute(
                "SELECT once.send(%s, %s::jsonb, %s)", (f"pool.{tag}", json.dumps({"round": r, "client": i}), key)
            ).fetchone()[0]
            c.commit()
            return mid

        sends += sum(1 for m in all_at_once(srcs, send) if m)

        def receive(i, c):
            first = c.execute("SELECT once.receive('ext', %s, 'invoice.paid')", (f"evt-{key}",)).fetchone()[0]
            if first:
                c.execute("INSERT INTO pool_effects (tag, event) VALUES (%s, %s)", (tag, f"evt-{key}"))
            c.commit()
            return first

        got = all_at_once(srcs, receive)
        if None not in got and sum(1 for g in got if g) != 1:
            err(f"once.receive evt-{key}: {got}")
        receives += len(got)

        message_id = uuid.uuid5(uuid.NAMESPACE_URL, f"pg_once-pool/{key}")

        def deliver(i, c):
            status = c.execute(
                "SELECT once.deliver(%s, %s::uuid, 'pool.deliver', %s::jsonb, jsonb_build_object('key', %s::text))",
                (f"pool-{tag}", str(message_id), json.dumps({"round": r}), key),
            ).fetchone()[0]
            c.commit()
            return status

        statuses = all_at_once(dsts, deliver)
        if None not in statuses and sorted(statuses) != ["duplicate"] * (clients - 1) + ["processed"]:
            err(f"once.deliver {message_id}: {statuses}")
        delivers += len(statuses)
    for c in srcs + dsts:
        c.close()
    print(json.dumps({"client": "psycopg", "runs": runs, "sends": sends, "receives": receives,
                      "delivers": delivers, "errors": errors[:5]}))
    return 1 if errors else 0


def control(src):
    conns = [psycopg.connect(src, prepare_threshold=0) for _ in range(8)]
    failed = 0
    for r in range(10):
        def q(i, c):
            try:
                c.execute("SELECT %s::int + 1", (r,)).fetchone()
                c.execute("SELECT %s::text || 'x'", (str(i),)).fetchone()
                c.commit()
                return True
            except psycopg.Error:
                c.rollback()
                return False

        failed += sum(1 for ok in all_at_once(conns, q) if ok is False)
    print(json.dumps({"client": "psycopg", "prepare_threshold": 0, "failed": failed, "of": 80}))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--control":
        sys.exit(control(sys.argv[2]))
    sys.exit(documented(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
