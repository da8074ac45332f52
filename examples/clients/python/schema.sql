-- The Python payment service (examples/clients/python) and, in this example, the saga that
-- calls it, in one database: the inbox record, the payment and the saga's next step commit
-- in one transaction. (With the saga in another database, reply through this database's
-- outbox instead — once.send to the command's reply_to — as examples/campus_cafe does.)
CREATE EXTENSION IF NOT EXISTS pg_once;
CREATE SCHEMA payments;

-- One row per capture command key ("<saga_id>:capture_payment"). A command resent after a
-- saga timeout is a new message (the inbox lets it in) with the same key: it gets the stored
-- reply instead of a second charge. A decline is stored too: it is the key's final answer.
CREATE TABLE payments.charges (
    idempotency_key text PRIMARY KEY,
    saga_id         text NOT NULL UNIQUE,
    amount          numeric NOT NULL CHECK (amount > 0),
    status          text NOT NULL CHECK (status IN ('captured', 'declined', 'refunded')),
    reply           jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- Money movements: a capture's second write, undone by a refund's.
CREATE TABLE payments.ledger (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    saga_id text NOT NULL,
    entry   text NOT NULL CHECK (entry IN ('capture', 'refund')),
    amount  numeric NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);

-- Refunds, tombstones included: a refund that overtakes its capture (the capture timed out
-- and the saga compensated it) leaves a row, so the late capture is refused, not charged.
CREATE TABLE payments.refunds (
    saga_id text PRIMARY KEY,
    amount  numeric NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);

-- The orchestrator's side: a checkout saga whose pivot is the payment.
SELECT once.saga_define('cafe_checkout', '{"steps": [
  {"name": "capture_payment", "action": {"topic": "payment.capture"},
   "compensation": {"topic": "payment.refund"}, "timeout": "30 seconds", "kind": "pivot"},
  {"name": "notify", "action": {"topic": "notify.send"}, "kind": "retriable"}
]}');

-- The worker's login role needs: once_relay (claim/ack/nack/dead), once_consumer (receive,
-- saga_reply) and its own tables:
--   GRANT once_relay, once_consumer TO payment_worker;
--   GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA payments TO payment_worker;
