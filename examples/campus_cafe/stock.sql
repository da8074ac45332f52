-- cafe_stock: reserves and releases stock. CP: never reserve the same order twice, never
-- sell what is not there.
CREATE TABLE cafe.items (
    item      text PRIMARY KEY,
    initial   integer NOT NULL,
    available integer NOT NULL CHECK (available >= 0)
);
CREATE TABLE cafe.reservations (
    saga_id     text PRIMARY KEY,
    item        text NOT NULL,
    qty         integer NOT NULL,
    status      text NOT NULL CHECK (status IN ('reserved', 'released', 'void')),
    reserved_at timestamptz,
    released_at timestamptz
);

CREATE FUNCTION cafe.reserve(msg once.inbound) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    saga text := (msg).payload->>'saga_id';
    d jsonb := (msg).payload->'data';
    r cafe.reservations;
BEGIN
    SELECT * INTO r FROM cafe.reservations WHERE saga_id = saga FOR UPDATE;
    IF FOUND AND r.status = 'void' THEN
        -- The release overtook this reserve (it was resent after a timeout): never reserve now.
        RETURN jsonb_build_object('outcome', 'failed', 'output', jsonb_build_object('error', 'order already released'));
    END IF;
    UPDATE cafe.items SET available = available - (d->>'qty')::integer
     WHERE item = d->>'item' AND available >= (d->>'qty')::integer;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('outcome', 'failed', 'output', jsonb_build_object('error', 'sold out: ' || (d->>'item')));
    END IF;
    INSERT INTO cafe.reservations VALUES (saga, d->>'item', (d->>'qty')::integer, 'reserved', now(), NULL);
    RETURN jsonb_build_object('outcome', 'succeeded', 'output', jsonb_build_object('reservation', 'res-' || saga));
END $$;

CREATE FUNCTION cafe.release(msg once.inbound) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    saga text := (msg).payload->>'saga_id';
    r cafe.reservations;
BEGIN
    IF cafe.fault(saga, 'release') THEN
        RETURN jsonb_build_object('outcome', 'compensation_failed', 'output', jsonb_build_object('error', 'stock db busy (injected)'));
    END IF;
    SELECT * INTO r FROM cafe.reservations WHERE saga_id = saga FOR UPDATE;
    IF NOT FOUND THEN
        -- Nothing reserved (yet): leave a tombstone so a late reserve is refused.
        INSERT INTO cafe.reservations VALUES (saga, (msg).payload->'data'->>'item', 0, 'void', NULL, now());
    ELSIF r.status = 'reserved' THEN
        UPDATE cafe.items SET available = available + r.qty WHERE item = r.item;
        UPDATE cafe.reservations SET status = 'released', released_at = now() WHERE saga_id = saga;
    END IF;
    RETURN jsonb_build_object('outcome', 'compensated');
END $$;

CREATE FUNCTION cafe.on_reserve(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- Injected fault "early_notify" (scenario D): a buggy component reports the notification
    -- as sent before the order even has its stock. Sent first, with the saga's ordering key,
    -- so it reaches the saga before the real reply.
    IF cafe.fault((msg).payload->>'saga_id', 'early_notify') THEN
        PERFORM once.send((msg).headers->>'reply_to',
            jsonb_build_object('saga_id', (msg).payload->>'saga_id', 'step', 'notify', 'outcome', 'succeeded'),
            (msg).payload->>'saga_id');
    END IF;
    PERFORM cafe.once_per_key(msg, 'cafe.reserve'::regproc);
END $$;
CREATE FUNCTION cafe.on_release(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT cafe.once_per_key(msg, 'cafe.release'::regproc) $$;

SELECT once.subscribe('stock.reserve', 'cafe.on_reserve(once.inbound)');
SELECT once.subscribe('stock.release', 'cafe.on_release(once.inbound)');
