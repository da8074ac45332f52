-- The WAL transport's SQL objects (docs/design.md, "WAL transport"): the key
-- that authenticates the stream's messages, and the write-back of a message the relay's sink
-- refused.

-- The key of the tag every message of the WAL transport carries (HMAC-SHA256,
-- core/wal_message.hpp). pg_logical_emit_message is executable by PUBLIC, so any role can
-- write a "pg_once" message into the stream; only messages tagged with this key come from
-- once.send. One row; readable by the extension's owner (once.send reads it as the owner)
-- and, through once.wal_secret(), by once_relay. 32 bytes from two gen_random_uuid() values
-- (pg_strong_random, 122 random bits each: 244 random bits), made in SQL so that CREATE
-- EXTENSION and the upgrade script fill it the same way without a C entry point.
CREATE TABLE once.wal_secret (
    single boolean NOT NULL DEFAULT true CONSTRAINT wal_secret_single CHECK (single),
    secret bytea   NOT NULL CONSTRAINT wal_secret_size CHECK (pg_catalog.octet_length(secret) = 32),
    CONSTRAINT wal_secret_pkey PRIMARY KEY (single)
);
REVOKE ALL ON TABLE once.wal_secret FROM PUBLIC;
INSERT INTO once.wal_secret (secret)
VALUES (pg_catalog.uuid_send(pg_catalog.gen_random_uuid()) OPERATOR(pg_catalog.||)
        pg_catalog.uuid_send(pg_catalog.gen_random_uuid()));
COMMENT ON TABLE once.wal_secret IS
    'The key of the WAL transport''s message tags (HMAC-SHA256); backends and relays read it once per session';

CREATE FUNCTION once.wal_secret() RETURNS bytea
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT s.secret FROM once.wal_secret s $$;
COMMENT ON FUNCTION once.wal_secret() IS
    'The key once-relay verifies the WAL transport''s message tags with (once_relay only)';

-- What a relay writes back: a record, so that the relay names each field
-- (jsonb_populate_record(NULL::once.wal_write_back_message, <JSON object>)) and a field is added
-- by name: one attribute here, a relay that does not send it writes NULL. The stream message's
-- fields (content_type NULL = application/json), then the write-back's: attempts the relay made
-- (0: none, behind its key), error, dead (refused for good), retry_after (the sink's
-- Retry-After). A keyed message comes back with the key_owner and key_seq it carried (format
-- version 2 or 3) and fenced: once.outbox.stream_fence is the WAL insert position after the
-- write-back took the key's lock, once.outbox.stream_fence_slot the slot of the relay writing it
-- back (`slot`, required with a key), and no claim takes the row until
-- once.wal_release_fences(slot, ...) clears it: only that slot's confirmation says the stream
-- messages before the fence are settled.
CREATE TYPE once.wal_write_back_message AS (
    id           uuid,
    topic        text,
    key          text,
    payload      jsonb,
    headers      jsonb,
    created_at   timestamptz,
    attempts     integer,
    error        text,
    dead         boolean,
    key_owner    oid,
    key_seq      uuid,
    slot         name,
    retry_after  interval,
    content_type text
);
COMMENT ON TYPE once.wal_write_back_message IS
    'A WAL transport message its relay writes back (once.wal_write_back), with the attempt''s outcome';

CREATE FUNCTION once.wal_write_back(message once.wal_write_back_message)
RETURNS boolean
AS 'MODULE_PATHNAME', 'once_wal_write_back' LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION once.wal_write_back(once.wal_write_back_message) IS
    'A relay gives back a WAL transport message its sink refused: retried after retry_after (the sink''s Retry-After) or the topic''s backoff, or dead, a keyed one fenced for the slot; false if the id is in the outbox already';

REVOKE ALL ON FUNCTION once.wal_secret(),
    once.wal_write_back(once.wal_write_back_message) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.wal_secret(),
    once.wal_write_back(once.wal_write_back_message) TO once_relay;

-- The relay of `slot` has confirmed it up to `confirmed`: every stream message committed before
-- a fence of that slot at or below it is settled (delivered, or written back behind the fenced
-- row), so those rows may be claimed (the relays are woken as by a send: channel once_outbox).
-- Another slot's fences stay: its relay group may not have passed them yet. A fence whose slot
-- no longer exists is released too: the stream messages it waited for went with the slot.
-- Returns how many rows of `slot` stay fenced (above `confirmed`).
CREATE FUNCTION once.wal_release_fences(slot name, confirmed pg_lsn) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE once.outbox o SET stream_fence = NULL, stream_fence_slot = NULL
     WHERE o.stream_fence IS NOT NULL
       AND ((o.stream_fence_slot OPERATOR(pg_catalog.=) slot AND o.stream_fence OPERATOR(pg_catalog.<=) confirmed)
            OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots s
                            WHERE s.slot_name OPERATOR(pg_catalog.=) o.stream_fence_slot));
    IF FOUND THEN
        PERFORM pg_catalog.pg_notify('once_outbox', NULL);
    END IF;
    RETURN (SELECT pg_catalog.count(*)::pg_catalog.int4 FROM once.outbox o
             WHERE o.stream_fence IS NOT NULL AND o.stream_fence_slot OPERATOR(pg_catalog.=) slot);
END
$$;
COMMENT ON FUNCTION once.wal_release_fences(name, pg_lsn) IS
    'A WAL transport relay confirmed its slot up to this position: written-back keyed messages that slot fenced at or below it (and those of slots that no longer exist) become claimable; returns how many of the slot''s stay fenced';

-- Whether the outbox table holds a message of (key, key_owner): while it does, the relay
-- writes the key's stream messages back behind it instead of publishing them.
CREATE FUNCTION once.wal_key_in_table(key text, key_owner oid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT EXISTS (SELECT 1 FROM once.outbox o
                  WHERE o.key OPERATOR(pg_catalog.=) wal_key_in_table.key AND o.key IS NOT NULL
                    AND o.key_owner OPERATOR(pg_catalog.=) wal_key_in_table.key_owner)
$$;
COMMENT ON FUNCTION once.wal_key_in_table(text, oid) IS
    'Whether the outbox table holds a message of this key and owner (the WAL transport''s relay writes the key''s stream messages back while it does)';

-- The keys of the rows `slot` fenced: a relay of that slot that starts (after kill -9, say)
-- writes back the stream messages of these keys that it reads again, as the relay that fenced
-- them would have.
CREATE FUNCTION once.wal_fenced_keys(slot name) RETURNS TABLE (key text, key_owner oid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT DISTINCT o.key, o.key_owner FROM once.outbox o
       WHERE o.stream_fence IS NOT NULL AND o.key IS NOT NULL
         AND o.stream_fence_slot OPERATOR(pg_catalog.=) wal_fenced_keys.slot $$;
COMMENT ON FUNCTION once.wal_fenced_keys(name) IS
    'The (key, key_owner) of written-back keyed messages this slot''s relay fenced and that are still fenced (the WAL transport''s relay loads them at start)';

REVOKE ALL ON FUNCTION once.wal_release_fences(name, pg_lsn), once.wal_key_in_table(text, oid), once.wal_fenced_keys(name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.wal_release_fences(name, pg_lsn), once.wal_key_in_table(text, oid), once.wal_fenced_keys(name)
    TO once_relay;
