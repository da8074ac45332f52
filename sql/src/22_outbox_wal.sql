-- The WAL transport's SQL objects (docs/design.md, "WAL transport (in progress)"): the key
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

CREATE FUNCTION once.wal_write_back(
    id         uuid,
    topic      text,
    key        text,
    payload    jsonb,
    headers    jsonb,
    created_at timestamptz,
    attempts   integer,
    error      text,
    dead       boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'once_wal_write_back' LANGUAGE C VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION once.wal_write_back(uuid, text, text, jsonb, jsonb, timestamptz, integer, text, boolean) IS
    'A relay gives back a WAL transport message its sink refused: retried after the topic''s backoff, or dead; false if the id is in the outbox already';

REVOKE ALL ON FUNCTION once.wal_secret(),
    once.wal_write_back(uuid, text, text, jsonb, jsonb, timestamptz, integer, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.wal_secret(),
    once.wal_write_back(uuid, text, text, jsonb, jsonb, timestamptz, integer, text, boolean) TO once_relay;
