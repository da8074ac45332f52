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
BEGIN
    PERFORM once.send((msg).headers->>'reply_to',
                      jsonb_build_object('saga_id', (msg).payload->>'saga_id', 'step', (msg).payload->>'step') || reply,
                      (msg).payload->>'saga_id');
    -- Injected fault "dup": the service replies twice (two messages, two message ids).
    IF cafe.fault((msg).payload->>'saga_id', 'dup_' || ((msg).payload->>'step')) THEN
        PERFORM once.send((msg).headers->>'reply_to',
                          jsonb_build_object('saga_id', (msg).payload->>'saga_id', 'step', (msg).payload->>'step') || reply,
                          (msg).payload->>'saga_id');
    END IF;
END $$;

-- Runs `execute(msg) returns jsonb reply` once per idempotency key, then replies.
CREATE FUNCTION cafe.once_per_key(msg once.inbound, execute regproc) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    key text := (msg).headers->>'idempotency_key';
    r jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(key));
    -- Injected fault "slow": the service takes longer than the saga's timeout once.
    IF cafe.fault((msg).payload->>'saga_id', 'slow') THEN
        PERFORM pg_sleep(coalesce(current_setting('cafe.slow_seconds', true), '1.5')::float8);
    END IF;
    SELECT c.reply INTO r FROM cafe.commands c WHERE c.idempotency_key = key;
    IF NOT FOUND THEN
        EXECUTE format('SELECT %s($1)', execute) INTO r USING msg;
        -- A failed compensation is not stored: the saga retries it and it may work then.
        IF r->>'outcome' <> 'compensation_failed' THEN
            INSERT INTO cafe.commands (idempotency_key, reply) VALUES (key, r);
        END IF;
    END IF;
    PERFORM cafe.reply(msg, r);
END $$;
