-- cafe_notify: tells the customer the order is ready. AP: may be late, is retried until sent.
CREATE TABLE cafe.notifications (
    saga_id text PRIMARY KEY,
    sent_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE cafe.notify_failures (
    saga_id text NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION cafe.send_notification(msg once.inbound) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    saga text := (msg).payload->>'saga_id';
BEGIN
    IF cafe.fault(saga, 'notify') THEN
        INSERT INTO cafe.notify_failures (saga_id) VALUES (saga);
        -- A failure is not stored under the key (see below): the retry must really retry.
        RETURN jsonb_build_object('outcome', 'failed', 'output', jsonb_build_object('error', 'push service unavailable (injected)'));
    END IF;
    INSERT INTO cafe.notifications (saga_id) VALUES (saga);
    RETURN jsonb_build_object('outcome', 'succeeded', 'output', jsonb_build_object('notified', true));
END $$;

-- Notifications are retried by the saga with the same key, so a failure must not be stored
-- as the key's answer: only successes are.
CREATE FUNCTION cafe.on_notify(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    key text := (msg).headers->>'idempotency_key';
    r jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(key));
    SELECT c.reply INTO r FROM cafe.commands c WHERE c.idempotency_key = key;
    IF NOT FOUND THEN
        r := cafe.send_notification(msg);
        IF r->>'outcome' = 'succeeded' THEN
            INSERT INTO cafe.commands (idempotency_key, reply) VALUES (key, r);
        END IF;
    END IF;
    PERFORM cafe.reply(msg, r);
END $$;

SELECT once.subscribe('notify.send', 'cafe.on_notify(once.inbound)');
