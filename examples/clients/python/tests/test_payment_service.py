"""The payment service against a real PostgreSQL with pg_once and schema.sql loaded (PG*
environment variables). Run by tests/integration/client_python.sh; skipped without
CAFE_PAYMENT_IT (plain `python3 -m unittest` runs only the unit tests)."""
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import unittest
import uuid

import psycopg
from psycopg.types.json import Jsonb

from cafe_payment.handler import SOURCE, Command, handle

EXAMPLE_DIR = pathlib.Path(__file__).resolve().parents[1]


def wait_for(what, seconds, condition):
    """Polls condition() until it is true; fails the test when the deadline passes."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        time.sleep(0.02)


@unittest.skipUnless(os.environ.get("CAFE_PAYMENT_IT"), "needs a database (tests/integration/client_python.sh)")
class ServiceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = psycopg.connect("", autocommit=True)
        # Fault injection: the ledger insert (the capture's second write) fails for listed sagas.
        cls.db.execute("""
            CREATE TABLE IF NOT EXISTS test_faults (saga_id text PRIMARY KEY);
            CREATE OR REPLACE FUNCTION test_fail_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF EXISTS (SELECT 1 FROM test_faults WHERE saga_id = NEW.saga_id) THEN
                    RAISE EXCEPTION 'injected ledger failure for %', NEW.saga_id;
                END IF;
                RETURN NEW;
            END $$;
            CREATE OR REPLACE TRIGGER test_fail_ledger BEFORE INSERT ON payments.ledger
                FOR EACH ROW EXECUTE FUNCTION test_fail_ledger();""")

    @classmethod
    def tearDownClass(cls):
        cls.db.close()

    def value(self, sql, *params):
        row = self.db.execute(sql, params).fetchone()
        return row[0] if row else None

    def start_saga(self, saga_id, amount=450, card="tok_visa"):
        self.db.execute("SELECT once.saga_start('cafe_checkout', %s, %s)",
                        (saga_id, Jsonb({"amount": amount, "card": card})))

    def saga(self, saga_id):
        return self.db.execute("SELECT status, step FROM once.sagas WHERE saga_id = %s", (saga_id,)).fetchone()

    def charges(self, saga_id):
        return self.value("SELECT count(*) FROM payments.charges WHERE saga_id = %s", saga_id)

    def ledger(self, saga_id):
        return self.value("SELECT count(*) FROM payments.ledger WHERE saga_id = %s", saga_id)

    def inbox_has(self, message_id):
        return self.value("SELECT count(*) FROM once.inbox WHERE source = %s AND message_id = %s",
                          SOURCE, message_id) == 1

    def capture_message(self, saga_id):
        """The capture command of saga_id still in the outbox (not acked), or None."""
        return self.db.execute("""SELECT id::text, attempt, last_error FROM once.outbox
                                   WHERE topic = 'payment.capture' AND payload->>'saga_id' = %s""",
                               (saga_id,)).fetchone()


class HandlerTest(ServiceTest):
    """handler.handle called directly, with the command claimed from the outbox by the test."""

    def claim(self, saga_id):
        rows = self.db.execute("""SELECT id::text, topic, payload, headers
                                    FROM once.claim('test', 100, '1 minute', ARRAY['payment.>'])""").fetchall()
        mine = [Command(*r) for r in rows if r[2]["saga_id"] == saga_id]
        self.assertEqual(len(rows), 1, "the test expects only its own command in the outbox")
        self.assertEqual(len(mine), 1)
        return mine[0]

    def ack(self, cmd):
        self.assertEqual(self.value("SELECT once.ack('test', %s)", [cmd.id]), 1)

    def test_duplicate_delivery_is_processed_once_and_advances_the_saga(self):
        self.start_saga("order-dup")
        cmd = self.claim("order-dup")
        with psycopg.connect("", autocommit=True) as conn:
            self.assertEqual(handle(conn, cmd), "processed")
            self.assertEqual(handle(conn, cmd), "duplicate")
        self.ack(cmd)
        self.assertEqual((self.charges("order-dup"), self.ledger("order-dup")), (1, 1))
        self.assertEqual(self.saga("order-dup"), ("running", "notify"))
        self.assertEqual(self.value("""SELECT count(*) FROM once.saga_history
                                        WHERE saga_id = 'order-dup' AND message_id = %s""", cmd.id), 1)
        self.assertEqual(self.value("""SELECT headers->>'idempotency_key' FROM once.outbox
                                        WHERE topic = 'notify.send' AND key = 'order-dup'"""), "order-dup:notify")
        # the saga finishes when the notification step replies
        self.assertEqual(self.value("SELECT once.saga_reply('order-dup', 'notify', 'succeeded')"), "applied")
        self.assertEqual(self.saga("order-dup")[0], "completed")

    def test_handler_failure_rolls_back_the_write_and_the_receive(self):
        self.start_saga("order-fail")
        self.db.execute("INSERT INTO test_faults VALUES ('order-fail')")
        cmd = self.claim("order-fail")
        with psycopg.connect("", autocommit=True) as conn:
            with self.assertRaises(psycopg.errors.RaiseException):
                handle(conn, cmd)
            # The charge (written before the failing ledger insert) and the inbox record are gone.
            self.assertEqual((self.charges("order-fail"), self.ledger("order-fail")), (0, 0))
            self.assertFalse(self.inbox_has(cmd.id))
            self.assertEqual(self.saga("order-fail"), ("running", "capture_payment"))
            # The redelivery runs the command again, once.
            self.db.execute("DELETE FROM test_faults")
            self.assertEqual(handle(conn, cmd), "processed")
            self.assertEqual(handle(conn, cmd), "duplicate")
        self.ack(cmd)
        self.assertEqual((self.charges("order-fail"), self.ledger("order-fail")), (1, 1))
        self.assertTrue(self.inbox_has(cmd.id))
        self.assertEqual(self.saga("order-fail"), ("running", "notify"))

    def test_resent_command_gets_the_stored_reply(self):
        # After a saga timeout the command comes again as a new message with the same key: the
        # inbox lets it in (another message id), the charge is not repeated.
        self.start_saga("order-resend")
        cmd = self.claim("order-resend")
        resent = Command(str(uuid.uuid4()), cmd.topic, cmd.payload, cmd.headers)
        with psycopg.connect("", autocommit=True) as conn:
            self.assertEqual(handle(conn, cmd), "processed")
            self.assertEqual(handle(conn, resent), "processed")
        self.ack(cmd)
        self.assertEqual((self.charges("order-resend"), self.ledger("order-resend")), (1, 1))
        self.assertEqual(self.saga("order-resend"), ("running", "notify"))
        event = self.value("""SELECT event FROM once.saga_history
                               WHERE saga_id = 'order-resend' AND message_id = %s""", resent.id)
        self.assertTrue(event.startswith("duplicate"), event)

    def test_declined_card_compensates_the_saga(self):
        self.start_saga("order-declined", card="tok_declined")
        cmd = self.claim("order-declined")
        with psycopg.connect("", autocommit=True) as conn:
            self.assertEqual(handle(conn, cmd), "processed")
        self.ack(cmd)
        self.assertEqual(self.value("SELECT status FROM payments.charges WHERE saga_id = 'order-declined'"), "declined")
        self.assertEqual(self.ledger("order-declined"), 0)
        self.assertEqual(self.saga("order-declined")[0], "compensated")


class WorkerTest(ServiceTest):
    """python3 -m cafe_payment.worker as a separate process, claiming from the outbox."""

    def start_worker(self, **env):
        proc = subprocess.Popen(
            [sys.executable, "-m", "cafe_payment.worker", "--name", "payment-worker", "--lease", "1 second",
             "--retry-after", "100 milliseconds", "--poll", "0.1"],
            cwd=EXAMPLE_DIR, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True)
        proc.lines = []
        threading.Thread(target=lambda: proc.lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
        self.addCleanup(self.stop_worker, proc)
        return proc

    @staticmethod
    def stop_worker(proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        proc.stdout.close()

    def test_crash_between_commit_and_ack_redelivery_is_skipped(self):
        worker = self.start_worker(CAFE_PAYMENT_CRASH="after_commit")
        self.start_saga("order-crash")
        self.assertEqual(worker.wait(timeout=30), -signal.SIGKILL)
        message_id = self.capture_message("order-crash")[0]   # committed, never acked
        self.assertTrue(self.inbox_has(message_id))
        self.assertEqual(self.charges("order-crash"), 1)

        worker = self.start_worker()
        wait_for("the redelivered command to be acked", 30, lambda: self.capture_message("order-crash") is None)
        wait_for("the worker's log line", 10,
                 lambda: any(line.startswith(f"duplicate {message_id}") for line in worker.lines))
        self.assertEqual((self.charges("order-crash"), self.ledger("order-crash")), (1, 1))
        self.assertEqual(self.saga("order-crash"), ("running", "notify"))
        self.assertEqual(self.value("SELECT count(*) FROM once.saga_history WHERE message_id = %s", message_id), 1)

    def test_failure_is_nacked_and_retried(self):
        self.db.execute("INSERT INTO test_faults VALUES ('order-retry')")
        self.start_worker()
        self.start_saga("order-retry")
        wait_for("a failed attempt recorded by nack", 30,
                 lambda: (m := self.capture_message("order-retry")) and m[1] >= 1 and "injected" in (m[2] or ""))
        self.assertEqual((self.charges("order-retry"), self.ledger("order-retry")), (0, 0))
        self.db.execute("DELETE FROM test_faults")
        wait_for("the saga to advance", 30, lambda: self.saga("order-retry") == ("running", "notify"))
        self.assertEqual((self.charges("order-retry"), self.ledger("order-retry")), (1, 1))

    def test_permanent_error_is_dead_lettered(self):
        # A command for a saga this database does not know: saga_reply raises ON402, which
        # sqlstate.py maps to 404, a permanent failure -> once.dead, nothing written.
        self.start_worker()
        message_id = self.value("""SELECT once.send('payment.capture',
            '{"saga_id": "no-such-saga", "step": "capture_payment", "data": {"amount": 5}}',
            'no-such-saga', '{"idempotency_key": "no-such-saga:capture_payment"}')""")
        last_error = wait_for("the dead letter", 30, lambda: self.value(
            "SELECT last_error FROM once.dead_letters WHERE id = %s", message_id))
        self.assertTrue(last_error.startswith("404: "), last_error)
        self.assertEqual(self.value("SELECT attempt FROM once.dead_letters WHERE id = %s", message_id), 1)
        self.assertEqual(self.charges("no-such-saga"), 0)


del ServiceTest  # the shared base has no tests of its own

if __name__ == "__main__":
    unittest.main()
