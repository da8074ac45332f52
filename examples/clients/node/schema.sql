-- The node payments service's own table. Every payment row is written in the same
-- transaction as its payment.captured outbox message and the idempotency key's response.
CREATE EXTENSION IF NOT EXISTS pg_once;
CREATE TABLE payments (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idempotency_key text NOT NULL UNIQUE,   -- one payment per request, whatever the retries
    charge_id       text NOT NULL UNIQUE,   -- the provider's charge
    amount          integer NOT NULL CHECK (amount > 0),
    currency        text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
-- The service's login role needs only once_producer (key_*, send) and its own table:
--   GRANT once_producer TO payments_app;
--   GRANT SELECT, INSERT ON payments TO payments_app;
