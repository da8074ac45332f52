-- cafe_payment: captures and refunds. CP: no order is charged twice; a refund always matches
-- a charge.
CREATE TABLE cafe.charges (
    saga_id     text PRIMARY KEY,
    amount      numeric NOT NULL,
    status      text NOT NULL CHECK (status IN ('captured', 'refunded', 'void')),
    captured_at timestamptz,
    refunded_at timestamptz
);
CREATE TABLE cafe.refunds (
    saga_id text PRIMARY KEY REFERENCES cafe.charges,
    amount  numeric NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION cafe.capture(msg once.inbound) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    saga text := (msg).payload->>'saga_id';
    d jsonb := (msg).payload->'data';
BEGIN
    IF EXISTS (SELECT 1 FROM cafe.charges WHERE saga_id = saga AND status = 'void') THEN
        RETURN jsonb_build_object('outcome', 'failed', 'output', jsonb_build_object('error', 'order already refunded'));
    END IF;
    IF d->>'card' = 'declined' THEN
        RETURN jsonb_build_object('outcome', 'failed', 'output', jsonb_build_object('error', 'card declined'));
    END IF;
    INSERT INTO cafe.charges VALUES (saga, (d->>'amount')::numeric, 'captured', now(), NULL);
    RETURN jsonb_build_object('outcome', 'succeeded', 'output', jsonb_build_object('payment_id', 'pay-' || saga));
END $$;

CREATE FUNCTION cafe.refund(msg once.inbound) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    saga text := (msg).payload->>'saga_id';
    c cafe.charges;
BEGIN
    SELECT * INTO c FROM cafe.charges WHERE saga_id = saga FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO cafe.charges VALUES (saga, 0, 'void', NULL, now());   -- tombstone
    ELSIF c.status = 'captured' THEN
        UPDATE cafe.charges SET status = 'refunded', refunded_at = now() WHERE saga_id = saga;
        INSERT INTO cafe.refunds VALUES (saga, c.amount);
    END IF;
    RETURN jsonb_build_object('outcome', 'compensated');
END $$;

CREATE FUNCTION cafe.on_capture(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT cafe.once_per_key(msg, 'cafe.capture'::regproc) $$;
CREATE FUNCTION cafe.on_refund(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT cafe.once_per_key(msg, 'cafe.refund'::regproc) $$;

SELECT once.subscribe('payment.capture', 'cafe.on_capture(once.inbound)');
SELECT once.subscribe('payment.refund', 'cafe.on_refund(once.inbound)');
