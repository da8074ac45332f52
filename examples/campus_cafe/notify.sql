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
CREATE FUNCTION cafe.on_notify(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT cafe.once_per_key(msg, 'cafe.send_notification'::regproc, store_failures => false) $$;

SELECT once.subscribe('notify.send', 'cafe.on_notify(once.inbound)');
