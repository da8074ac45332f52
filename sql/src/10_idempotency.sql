-- Idempotency keys: once.run and once.key_* (see README "Idempotent commands").

CREATE TABLE once.keys (
    scope          text        NOT NULL,
    key            text        NOT NULL,
    fingerprint    bytea       NOT NULL,   -- SHA-256 of the canonical request JSON
    state          text        NOT NULL CHECK (state IN ('in_progress', 'done')),
    response       jsonb,
    status         integer,                -- HTTP-style status stored by key_complete
    recovery_point text,                   -- last finished phase (key_checkpoint)
    checkpoint     jsonb,                  -- data saved with the recovery point
    attempt        integer     NOT NULL DEFAULT 1,
    lease          interval,
    locked_until   timestamptz,            -- lease end while in_progress
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    expires_at     timestamptz NOT NULL,
    -- The role that stored the key: each role has its own namespace, so another role's key
    -- of the same scope and name is a different key (README "Who may use
    -- a key"). 0: stored by 0.1, shared until its bounded window ends.
    owner          oid         NOT NULL,
    PRIMARY KEY (scope, key, owner)
);
COMMENT ON TABLE once.keys IS 'Idempotency keys and their stored responses; an expired row is treated as absent';
-- Purge finds expired keys through a BRIN index: expiry grows with insertion time, and BRIN
-- costs the insert path next to nothing (a B-tree here would be a second index per key).
CREATE INDEX keys_expires_at_brin ON once.keys USING brin (expires_at) WITH (autosummarize = on);
ALTER TABLE once.keys SET (fillfactor = 90);  -- room for HOT updates by key_checkpoint/complete
REVOKE ALL ON TABLE once.keys FROM PUBLIC;
GRANT SELECT ON TABLE once.keys TO once_admin;

CREATE FUNCTION once.run(
    scope    text,
    key      text,
    request  jsonb,
    command  text,
    ttl      interval DEFAULT '24 hours',
    OUT replayed boolean,
    OUT response jsonb)
RETURNS record
AS 'MODULE_PATHNAME', 'once_run' LANGUAGE C VOLATILE;
-- No SET search_path here on purpose: the command is the caller's SQL and runs with the
-- caller's rights and search_path. pg_once's own statements are fully schema-qualified.
COMMENT ON FUNCTION once.run(text, text, jsonb, text, interval) IS
    'Run command ($1 = request) once per (scope, key) in the caller''s transaction; retries get the stored response';

CREATE FUNCTION once.key_acquire(
    scope    text,
    key      text,
    request  jsonb,
    lease    interval DEFAULT '5 minutes',
    ttl      interval DEFAULT '24 hours',
    OUT state          text,
    OUT response       jsonb,
    OUT recovery_point text,
    OUT attempt        integer,
    OUT status         integer,
    OUT checkpoint     jsonb)
RETURNS record
AS 'MODULE_PATHNAME', 'once_key_acquire' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.key_acquire(text, text, jsonb, interval, interval) IS
    'acquired (do the work), replay (stored response), or busy (someone holds the lease); an expired lease is taken over';

CREATE FUNCTION once.key_checkpoint(
    scope text, key text, recovery_point text, data jsonb DEFAULT NULL, attempt integer DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'once_key_checkpoint' LANGUAGE C VOLATILE;

CREATE FUNCTION once.key_complete(
    scope text, key text, response jsonb, status integer DEFAULT 200, attempt integer DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'once_key_complete' LANGUAGE C VOLATILE;

CREATE FUNCTION once.key_release(scope text, key text, attempt integer DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'once_key_release' LANGUAGE C VOLATILE;

CREATE FUNCTION once.request_fingerprint(request jsonb) RETURNS bytea
AS 'MODULE_PATHNAME', 'once_request_fingerprint' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION once.request_fingerprint(jsonb) IS
    'SHA-256 of the canonical JSON form: key order, whitespace and number spelling do not matter';

CREATE FUNCTION once.purge_keys(max_rows integer) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH doomed AS (
        DELETE FROM once.keys
         WHERE ctid = ANY (ARRAY(SELECT ctid FROM once.keys
                                  WHERE expires_at <= now()
                                  LIMIT max_rows
                                  FOR UPDATE SKIP LOCKED))
           AND expires_at <= now()
        RETURNING 1)
    SELECT count(*) FROM doomed
$$;

REVOKE ALL ON FUNCTION once.run(text, text, jsonb, text, interval),
    once.key_acquire(text, text, jsonb, interval, interval),
    once.key_checkpoint(text, text, text, jsonb, integer),
    once.key_complete(text, text, jsonb, integer, integer),
    once.key_release(text, text, integer),
    once.request_fingerprint(jsonb),
    once.purge_keys(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.run(text, text, jsonb, text, interval),
    once.key_acquire(text, text, jsonb, interval, interval),
    once.key_checkpoint(text, text, text, jsonb, integer),
    once.key_complete(text, text, jsonb, integer, integer),
    once.key_release(text, text, integer),
    once.request_fingerprint(jsonb) TO once_producer;
