-- Shared by the three services (cafe_stock, cafe_payment, cafe_notify): run each saga command
-- once per idempotency key and reply through the service's own outbox. A resent command (the
-- saga timed out waiting, or a relay redelivered after a crash) gets the stored reply again:
-- the first reply may be the one that got lost.
CREATE SCHEMA IF NOT EXISTS cafe;

CREATE TABLE cafe.commands (
    idempotency_key text PRIMARY KEY,
    reply           jsonb NOT NULL,
    at              timestamptz NOT NULL DEFAULT now()
);

-- Fault injection for the demo: per saga, how often a command kind fails before it works.
CREATE TABLE cafe.faults (
    saga_id text NOT NULL,
    what    text NOT NULL,
    left_   integer NOT NULL,
    PRIMARY KEY (saga_id, what)
);

-- True (and one fewer left) when the fault `what` is injected for this saga.
CREATE FUNCTION cafe.fault(saga_id text, what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE cafe.faults f SET left_ = left_ - 1
     WHERE f.saga_id = fault.saga_id AND f.what = fault.what AND f.left_ > 0;
    RETURN FOUND;
END $$;

-- Sends the reply a saga expects on its reply_to topic.
CREATE FUNCTION cafe.reply(msg once.inbound, reply jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    saga text := (msg).payload->>'saga_id';
    step text := (msg).payload->>'step';
    -- "saga" (the definition, in commands since 0.3) goes back, so the reply finds its saga
    -- even when another definition has a saga with the same id.
    body jsonb := jsonb_strip_nulls(jsonb_build_object('saga_id', saga, 'step', step,
                                                       'saga', (msg).payload->>'saga')) || reply;
    action boolean := NOT coalesce(((msg).headers->>'compensate')::boolean, false);
BEGIN
    -- Injected fault "lose": the reply is lost on the way; the saga times out and resends.
    IF action AND cafe.fault(saga, 'lose_' || step) THEN
        RETURN;
    END IF;
    -- Injected fault "late": the reply arrives only after cafe.late_seconds (outbox deliver_at),
    -- after the saga's timeout: the saga resends, and the late reply comes in afterwards.
    IF action AND cafe.fault(saga, 'late_' || step) THEN
        PERFORM once.send((msg).headers->>'reply_to', body, NULL, NULL,
                          now() + make_interval(secs => coalesce(current_setting('cafe.late_seconds', true), '3')::float8));
        RETURN;
    END IF;
    PERFORM once.send((msg).headers->>'reply_to', body, saga);
    -- Injected fault "dup": the service replies twice (two messages, two message ids).
    IF cafe.fault(saga, 'dup_' || step) THEN
        PERFORM once.send((msg).headers->>'reply_to', body, saga);
    END IF;
END $$;

-- Runs `execute(msg) returns jsonb reply` once per idempotency key, then replies.
-- store_failures: whether a 'failed' reply is the key's final answer (a declined card is;
-- a notification outage is not: the saga retries it with the same key and it may work then).
CREATE FUNCTION cafe.once_per_key(msg once.inbound, execute regproc, store_failures boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    key text := (msg).headers->>'idempotency_key';
    r jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(key));
    SELECT c.reply INTO r FROM cafe.commands c WHERE c.idempotency_key = key;
    IF NOT FOUND THEN
        EXECUTE format('SELECT %s($1)', execute) INTO r USING msg;
        -- A failed compensation is never stored: the saga retries it and it may work then.
        IF r->>'outcome' <> 'compensation_failed' AND (store_failures OR r->>'outcome' <> 'failed') THEN
            INSERT INTO cafe.commands (idempotency_key, reply) VALUES (key, r);
        END IF;
    END IF;
    PERFORM cafe.reply(msg, r);
END $$;
