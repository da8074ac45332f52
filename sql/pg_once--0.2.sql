-- Generated from sql/src/ by the build; edit the parts, not this file.

-- ---- sql/src/00_schema.sql ----
-- pg_once: schema, roles, privileges.
-- This file and its siblings in sql/src/ are the current version (default_version in
-- sql/pg_once.control), concatenated in name order into pg_once--<version>.sql at build time
-- (one concern per file). Released versions are frozen: sql/pg_once--0.1.sql is 0.1 as
-- shipped, and every change made here since is also written, by hand, into the upgrade
-- script sql/pg_once--<previous>--<version>.sql (the upgrade test compares both ways).

\echo Use "CREATE EXTENSION pg_once" to load this file. \quit

-- Roles are cluster-wide and may already exist (pg_once installed in another database).
-- They are NOLOGIN groups: grant them to your application's login roles.
DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['once_producer', 'once_consumer', 'once_relay', 'once_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END
$roles$;

-- Created here, not through the control file, so the schema is an extension member and
-- DROP EXTENSION removes it (as pg_cron does).
CREATE SCHEMA once;
COMMENT ON SCHEMA once IS 'pg_once: idempotency keys, transactional outbox, inbox and sagas';

-- Nobody but the roles may even look inside; the tables are reached through functions.
REVOKE ALL ON SCHEMA once FROM PUBLIC;
GRANT USAGE ON SCHEMA once TO once_producer, once_consumer, once_relay, once_admin;
GRANT once_producer, once_consumer, once_relay TO once_admin;

-- Self-test of the C++/PostgreSQL error boundary (see extension/src/pg/selftest.cpp).
CREATE FUNCTION once.guard_selftest(mode text) RETURNS text
    AS 'MODULE_PATHNAME', 'once_guard_selftest' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once.guard_selftest(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.guard_selftest(text) TO once_admin;

-- ---- sql/src/10_idempotency.sql ----
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
    -- The role that stored the key (0.2): only it, and roles with its privileges, may use the
    -- key (README "Who may use a key"). NULL: stored by 0.1, shared until it expires.
    owner          oid,
    PRIMARY KEY (scope, key)
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

-- ---- sql/src/20_outbox.sql ----
-- Transactional outbox: once.send / send_many (producers), once.claim / ack / nack / extend
-- (relays), retry policies, dead letters, statistics. See docs/outbox.md.
--
-- Storage rules (they keep the table small and claims fast under real traffic):
--  * one row per message that is not yet acknowledged; ack DELETEs it (no "sent" status);
--  * a claim updates only visible_at, attempt and relay, none of which is indexed, so claims
--    are HOT updates that add no index entries;
--  * claims walk the primary key (time-ordered v7 ids) and, for the few messages whose claim
--    position is not their id (delayed, retried, dead), a partial index on pos, both from a
--    per-backend low watermark, so dead index entries left by acked rows that VACUUM cannot
--    yet remove (an old snapshot elsewhere) are skipped, not walked each claim;
--  * a claim for some topics walks (topic, claim position) instead, one topic at a time, so
--    another topic's backlog costs it nothing (0.2);
--  * a keyed message behind its key's head waits at the greatest position, after every range
--    a claim reads, until the head's ack promotes it (0.2).

CREATE TABLE once.outbox (
    id          uuid        NOT NULL,              -- message id (UUID v7 unless the producer chose one)
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    visible_at  timestamptz NOT NULL,              -- claimable from: deliver_at, lease end, next retry; infinity when dead
    attempt     integer     NOT NULL DEFAULT 0,    -- deliveries so far (each claim adds one)
    relay       text,                              -- lease holder (last claimer) until ack / nack
    -- (visible_at, attempt and relay sit together: a claim's HOT update logs only these bytes)
    pos         uuid,                              -- claim order when it is not id: a v7 uuid of the time the
                                                   -- message became or becomes due; nil when dead; all ones
                                                   -- while it waits behind its key's head (0.2)
    dead_at     timestamptz,                       -- set when attempts are exhausted
    key_seq     uuid,                              -- send order within key (strictly increasing per key)
    topic       text        NOT NULL,
    key         text,                              -- ordering key; NULL = no ordering
    payload     jsonb       NOT NULL,
    headers     jsonb,
    last_error  text,
    CONSTRAINT outbox_pkey PRIMARY KEY (id)
) WITH (
    fillfactor = 40,                               -- room for a HOT version of every row a claim updates
    autovacuum_vacuum_scale_factor = 0,            -- a queue: vacuum by row count, not by size
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 10000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 10000
);
-- Most messages are claimed in id order (pos IS NULL) through the primary key; only delayed,
-- retried, redriven, dead and explicitly numbered messages have a pos and are in this index.
CREATE INDEX outbox_pos ON once.outbox (pos) WHERE pos IS NOT NULL;
CREATE INDEX outbox_key ON once.outbox (key, key_seq) WHERE key IS NOT NULL;
-- Topic-filtered claims (0.2): each wanted topic's messages in claim position order.
CREATE INDEX outbox_topic ON once.outbox (topic, (COALESCE(pos, id)));
COMMENT ON TABLE once.outbox IS
    'Messages not yet acknowledged (ready, delayed, in flight or dead); acked rows are deleted';
REVOKE ALL ON TABLE once.outbox FROM PUBLIC;

-- What once.claim returns.
CREATE TYPE once.message AS (
    id         uuid,
    topic      text,
    key        text,
    payload    jsonb,
    headers    jsonb,
    attempt    integer,
    created_at timestamptz
);

-- Per-topic retry policy and delivered-history retention. Topics without a row use the
-- defaults (25 attempts, 1 s .. 1 h backoff, no history).
CREATE TABLE once.outbox_topic_policies (
    topic        text     PRIMARY KEY,
    max_attempts integer  NOT NULL DEFAULT 25 CHECK (max_attempts BETWEEN 1 AND 1000),
    backoff_base interval NOT NULL DEFAULT '1 second',
    backoff_max  interval NOT NULL DEFAULT '1 hour',
    retention    interval                           -- keep acked messages this long; NULL = not at all
);
REVOKE ALL ON TABLE once.outbox_topic_policies FROM PUBLIC;
GRANT SELECT ON TABLE once.outbox_topic_policies TO once_admin, once_relay;

-- Optional delivered history (only topics whose policy sets a retention).
CREATE TABLE once.outbox_delivered (
    id           uuid        NOT NULL,
    topic        text        NOT NULL,
    key          text,
    payload      jsonb       NOT NULL,
    headers      jsonb,
    attempt      integer     NOT NULL,
    created_at   timestamptz NOT NULL,
    delivered_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    relay        text,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX outbox_delivered_id ON once.outbox_delivered (id);
CREATE INDEX outbox_delivered_expires_brin ON once.outbox_delivered USING brin (expires_at)
    WITH (autosummarize = on);
REVOKE ALL ON TABLE once.outbox_delivered FROM PUBLIC;
GRANT SELECT ON TABLE once.outbox_delivered TO once_admin;

-- ----------------------------------------------------------------------------- producers

CREATE FUNCTION once.send(
    topic      text,
    payload    jsonb,
    key        text        DEFAULT NULL,
    headers    jsonb       DEFAULT NULL,
    deliver_at timestamptz DEFAULT NULL,
    message_id uuid        DEFAULT NULL)
RETURNS uuid
AS 'MODULE_PATHNAME', 'once_send' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid) IS
    'Write a message in the caller''s transaction; returns its id (UUID v7). A repeated explicit message_id is a no-op';

CREATE FUNCTION once.send_many(topic text, payloads jsonb[], keys text[] DEFAULT NULL)
RETURNS SETOF uuid
AS 'MODULE_PATHNAME', 'once_send_many' LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION once.send_many(text, jsonb[], text[]) IS
    'Write many messages of one topic in one statement; returns their ids in array order';

-- ----------------------------------------------------------------------------- relays

CREATE FUNCTION once._outbox_topics_match(patterns text[], topic text) RETURNS boolean
AS 'MODULE_PATHNAME', 'once_outbox_topics_match' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION once._outbox_topics_match(text[], text) IS
    'True when topic matches one of the NATS-style patterns (used by once.claim)';
REVOKE ALL ON FUNCTION once._outbox_topics_match(text[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once._outbox_topics_match(text[], text) TO once_relay, once_admin;

CREATE FUNCTION once.claim(
    relay  text,
    batch  integer  DEFAULT 100,
    lease  interval DEFAULT '30 seconds',
    topics text[]   DEFAULT NULL)
RETURNS SETOF once.message
AS 'MODULE_PATHNAME', 'once_claim' LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION once.claim(text, integer, interval, text[]) IS
    'Lease up to batch ready messages (oldest first, one per key at a time) to relay';

CREATE FUNCTION once.claim_locked(
    relay  text,
    batch  integer DEFAULT 100,
    topics text[]  DEFAULT NULL)
RETURNS SETOF once.message
AS 'MODULE_PATHNAME', 'once_claim_locked' LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION once.claim_locked(text, integer, text[]) IS
    'Take up to batch ready messages in the caller''s transaction (no lease: the transaction''s lock is it); ack, nack or dead each before COMMIT, or ROLLBACK to give them all back';

CREATE FUNCTION once.ack(relay text, ids uuid[]) RETURNS integer
AS 'MODULE_PATHNAME', 'once_ack' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.ack(text, uuid[]) IS
    'Delete delivered messages held by relay; returns how many were acknowledged (stale ids are not)';

CREATE FUNCTION once.nack(relay text, id uuid, error text, retry_after interval DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'once_nack' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.nack(text, uuid, text, interval) IS
    'Record a failed delivery: retry (after retry_after or the topic''s backoff), dead (attempts exhausted) or stale (not held by relay)';

CREATE FUNCTION once.dead(relay text, id uuid, error text)
RETURNS text
AS 'MODULE_PATHNAME', 'once_dead' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.dead(text, uuid, text) IS
    'Give a claimed message back as undeliverable for good (the sink refused it: HTTP 4xx, inbox poison): it is dead at once, whatever attempts are left. Returns dead, or stale when the lease was taken over';

CREATE FUNCTION once.extend(relay text, ids uuid[], lease interval) RETURNS integer
AS 'MODULE_PATHNAME', 'once_extend' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.extend(text, uuid[], interval) IS
    'Extend the lease of messages held by relay to now() + lease; returns how many were extended';

-- Internal: a claim position (v7 uuid) for a point in time.
CREATE FUNCTION once._outbox_position(at timestamptz) RETURNS uuid
AS 'MODULE_PATHNAME', 'once_outbox_position' LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION once._outbox_position(timestamptz) FROM PUBLIC;

-- Internal: once.discard removed messages of these keys (their next messages are promoted at
-- commit, 0.2).
CREATE FUNCTION once._outbox_keys_released(keys text[]) RETURNS void
AS 'MODULE_PATHNAME', 'once_outbox_keys_released' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once._outbox_keys_released(text[]) FROM PUBLIC;

-- Internal: whether the coalescing notifier is available (pg_once in shared_preload_libraries).
CREATE FUNCTION once.outbox_notifier_preloaded() RETURNS boolean
AS 'MODULE_PATHNAME', 'once_outbox_notifier_preloaded' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION once.outbox_notifier_preloaded() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.outbox_notifier_preloaded() TO once_admin, once_relay;

CREATE FUNCTION once.outbox_notifier_status(OUT preloaded boolean, OUT worker_pid integer, OUT notifies bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'once_outbox_notifier_status' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.outbox_notifier_status() IS
    'Coalescing notifier of this database: available (preloaded), its pid (NULL when idle), NOTIFYs sent since start';
REVOKE ALL ON FUNCTION once.outbox_notifier_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.outbox_notifier_status() TO once_admin, once_relay;

-- ----------------------------------------------------------------------------- policy

CREATE FUNCTION once.topic_policy(
    topic        text,
    max_attempts integer  DEFAULT 25,
    backoff_base interval DEFAULT '1 second',
    backoff_max  interval DEFAULT '1 hour',
    retention    interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM once._outbox_validate_policy(topic, max_attempts, backoff_base, backoff_max, retention);
    INSERT INTO once.outbox_topic_policies AS p (topic, max_attempts, backoff_base, backoff_max, retention)
    VALUES (topic, max_attempts, backoff_base, backoff_max, retention)
    ON CONFLICT ON CONSTRAINT outbox_topic_policies_pkey DO UPDATE
       SET max_attempts = excluded.max_attempts, backoff_base = excluded.backoff_base,
           backoff_max = excluded.backoff_max, retention = excluded.retention;
END
$$;
COMMENT ON FUNCTION once.topic_policy(text, integer, interval, interval, interval) IS
    'Set a topic''s retry policy (max attempts, backoff window) and delivered-history retention';

CREATE FUNCTION once._outbox_validate_policy(
    topic text, max_attempts integer, backoff_base interval, backoff_max interval, retention interval)
RETURNS void
AS 'MODULE_PATHNAME', 'once_outbox_validate_policy' LANGUAGE C IMMUTABLE;
REVOKE ALL ON FUNCTION once._outbox_validate_policy(text, integer, interval, interval, interval) FROM PUBLIC;

-- ----------------------------------------------------------------------------- dead letters

CREATE VIEW once.dead_letters AS
SELECT o.id, o.topic, o.key, o.payload, o.headers, o.attempt, o.last_error,
       o.created_at, o.dead_at,
       (o.key IS NOT NULL) AS blocks_key
  FROM once.outbox o
 WHERE o.dead_at IS NOT NULL;
COMMENT ON VIEW once.dead_letters IS
    'Messages whose attempts are exhausted; a keyed one holds back later messages of its key until redriven or discarded';
REVOKE ALL ON TABLE once.dead_letters FROM PUBLIC;
GRANT SELECT ON TABLE once.dead_letters TO once_admin, once_relay;

-- Keys whose oldest message is dead: the messages behind it wait (per-key order is kept).
-- A key is blocked by its oldest message when that one is dead, or when it is delayed
-- (deliver_at in the future, never delivered) and others wait behind it: one producer's
-- delayed message holds back another's later ones of the same key, and that must show
-- (issue 11, finding 5). reason, held_message_id and held_until came in 0.2 (appended).
CREATE VIEW once.blocked_keys AS
SELECT h.key, h.topic, CASE WHEN h.dead_at IS NOT NULL THEN h.id END AS dead_message_id,
       h.dead_at, h.last_error, h.waiting,
       CASE WHEN h.dead_at IS NOT NULL THEN 'dead' ELSE 'delayed' END AS reason,
       h.id AS held_message_id,
       CASE WHEN h.dead_at IS NULL THEN h.visible_at END AS held_until
  FROM (SELECT d.key, d.topic, d.id, d.dead_at, d.last_error, d.visible_at,
               (SELECT pg_catalog.count(*) FROM once.outbox w
                 WHERE w.key = d.key AND w.key_seq > d.key_seq) AS waiting
          FROM once.outbox d
         WHERE d.key IS NOT NULL
           AND (d.dead_at IS NOT NULL OR (d.attempt = 0 AND d.visible_at > pg_catalog.now()))
           AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = d.key AND e.key_seq < d.key_seq)) h
 WHERE h.dead_at IS NOT NULL OR h.waiting > 0;
COMMENT ON VIEW once.blocked_keys IS
    'Ordering keys held back by their oldest message: dead (redrive or discard it) or delayed with messages waiting behind it';
REVOKE ALL ON TABLE once.blocked_keys FROM PUBLIC;
GRANT SELECT ON TABLE once.blocked_keys TO once_admin, once_relay;

-- The ids argument of once.redrive and once.discard: a non-empty array without NULLs.
CREATE FUNCTION once._check_dead_letter_ids(ids uuid[]) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF ids IS NULL OR pg_catalog.cardinality(ids) = 0 OR pg_catalog.array_position(ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be a non-empty array without NULLs'
            USING ERRCODE = 'ON211', DETAIL = pg_catalog.format('ids was %s.', ids),
                  HINT = 'Pass the ids of dead letters, e.g. from once.dead_letters.';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION once._check_dead_letter_ids(uuid[]) FROM PUBLIC;

CREATE FUNCTION once.redrive(ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
BEGIN
    PERFORM once._check_dead_letter_ids(ids);
    UPDATE once.outbox
       SET dead_at = NULL, attempt = 0, relay = NULL, visible_at = pg_catalog.now(),
           pos = once._outbox_position(pg_catalog.clock_timestamp())
     WHERE id = ANY (ids) AND dead_at IS NOT NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        NOTIFY once_outbox;
    END IF;
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.redrive(uuid[]) IS
    'Bring dead letters back: attempts start again from 0; returns how many were dead letters';

CREATE FUNCTION once.discard(ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    released text[];
BEGIN
    PERFORM once._check_dead_letter_ids(ids);
    WITH d AS (DELETE FROM once.outbox WHERE id = ANY (ids) AND dead_at IS NOT NULL RETURNING key)
    SELECT pg_catalog.count(*), pg_catalog.array_agg(d.key) FILTER (WHERE d.key IS NOT NULL)
      INTO n, released FROM d;
    -- a discarded head releases its key: the next message is promoted at commit
    PERFORM once._outbox_keys_released(released);
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.discard(uuid[]) IS
    'Delete dead letters for good (releases their keys); returns how many were deleted';

-- ----------------------------------------------------------------------------- statistics

CREATE VIEW once.outbox_stats AS
SELECT o.topic,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NULL AND o.visible_at <= pg_catalog.now()) AS ready,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NULL AND o.visible_at > pg_catalog.now() AND o.relay IS NULL) AS delayed,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NULL AND o.visible_at > pg_catalog.now() AND o.relay IS NOT NULL) AS in_flight,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NOT NULL) AS dead,
       pg_catalog.now() - pg_catalog.min(o.created_at) FILTER (WHERE o.dead_at IS NULL AND o.visible_at <= pg_catalog.now()) AS oldest_ready_age
  FROM once.outbox o
 GROUP BY o.topic;
COMMENT ON VIEW once.outbox_stats IS
    'Per topic: ready, delayed (deliver_at or retry backoff), in flight (leased), dead, age of the oldest ready message';
REVOKE ALL ON TABLE once.outbox_stats FROM PUBLIC;
GRANT SELECT ON TABLE once.outbox_stats TO once_admin, once_relay;

-- ----------------------------------------------------------------------------- maintenance

CREATE FUNCTION once.purge_outbox(max_rows integer) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH doomed AS (
        DELETE FROM once.outbox_delivered
         WHERE ctid = ANY (ARRAY(SELECT ctid FROM once.outbox_delivered
                                  WHERE expires_at <= now()
                                  LIMIT greatest(max_rows, 0)))
        RETURNING 1)
    SELECT count(*) FROM doomed
$$;

-- ----------------------------------------------------------------------------- privileges

REVOKE ALL ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid),
    once.send_many(text, jsonb[], text[]),
    once.claim(text, integer, interval, text[]),
    once.claim_locked(text, integer, text[]),
    once.ack(text, uuid[]),
    once.nack(text, uuid, text, interval),
    once.dead(text, uuid, text),
    once.extend(text, uuid[], interval),
    once.topic_policy(text, integer, interval, interval, interval),
    once.redrive(uuid[]),
    once.discard(uuid[]),
    once.purge_outbox(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid),
    once.send_many(text, jsonb[], text[]) TO once_producer;
GRANT EXECUTE ON FUNCTION once.claim(text, integer, interval, text[]),
    once.claim_locked(text, integer, text[]),
    once.ack(text, uuid[]),
    once.nack(text, uuid, text, interval),
    once.dead(text, uuid, text),
    once.extend(text, uuid[], interval) TO once_relay;
GRANT EXECUTE ON FUNCTION once.topic_policy(text, integer, interval, interval, interval),
    once.redrive(uuid[]),
    once.discard(uuid[]) TO once_admin;

-- Without shared_preload_libraries the coalescing notifier cannot run: say so once, here.
DO $preload$
BEGIN
    IF NOT once.outbox_notifier_preloaded() THEN
        RAISE WARNING 'pg_once is not in shared_preload_libraries: every transaction that calls once.send will NOTIFY at commit'
            USING DETAIL = 'NOTIFY takes a cluster-wide lock at commit, which limits producer throughput (see docs/outbox.md).',
                  HINT = 'Add pg_once to shared_preload_libraries and restart the server to coalesce relay wake-ups in one background worker.';
    END IF;
END
$preload$;

-- ---- sql/src/30_inbox.sql ----
-- Inbox: duplicate-proof consumption (see docs/inbox.md).
--   once.receive          record (source, message_id); true the first time, false for a duplicate
--   once.subscribe        route topics (NATS-style patterns) to handler(msg once.inbound)
--   once.deliver          receive + every matching handler in the caller's transaction
--   once.inbox_failed     count a failed attempt after the failing transaction rolled back;
--                         after max_attempts the message is poison until once.inbox_retry

-- What a handler receives.
CREATE TYPE once.inbound AS (
    source     text,
    message_id text,
    topic      text,
    payload    jsonb,
    headers    jsonb
);
COMMENT ON TYPE once.inbound IS 'The message passed to inbox handlers: handler(msg once.inbound)';
GRANT USAGE ON TYPE once.inbound TO PUBLIC;

-- Received message ids. A row means: a transaction that processed this message committed, or
-- (poison) the message failed max_attempts times and must not run until once.inbox_retry.
-- Keeping poison here makes the one unique-index probe of the insert detect both, so the
-- delivery path needs no second lookup.
CREATE TABLE once.inbox (
    source      text        NOT NULL,
    message_id  text        NOT NULL,
    topic       text,
    received_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    poison      boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (source, message_id)
);
COMMENT ON TABLE once.inbox IS 'Ids of processed (or poison) messages per source; kept for the source''s retention window';
-- Purge finds old rows through BRIN: received_at grows with insertion order and BRIN costs
-- the receive path next to nothing (a second B-tree would cost every receive an index insert).
CREATE INDEX inbox_received_at_brin ON once.inbox USING brin (received_at) WITH (autosummarize = on);
REVOKE ALL ON TABLE once.inbox FROM PUBLIC;
GRANT SELECT ON TABLE once.inbox TO once_admin;

-- Per-source settings; a source without a row uses the defaults (7 days, 5 attempts).
CREATE TABLE once.inbox_sources (
    source       text     PRIMARY KEY,
    retention    interval NOT NULL DEFAULT '7 days' CHECK (retention > '0'),
    max_attempts integer  NOT NULL DEFAULT 5 CHECK (max_attempts > 0)
);
COMMENT ON TABLE once.inbox_sources IS 'Inbox retention window and poison threshold per source (defaults: 7 days, 5 attempts)';
REVOKE ALL ON TABLE once.inbox_sources FROM PUBLIC;
GRANT SELECT ON TABLE once.inbox_sources TO once_admin;

-- Failed delivery attempts, recorded by once.inbox_failed outside the failed transaction.
CREATE TABLE once.inbox_failures (
    source          text        NOT NULL,
    message_id      text        NOT NULL,
    attempts        integer     NOT NULL,
    last_error      text,
    first_failed_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_failed_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (source, message_id)
);
COMMENT ON TABLE once.inbox_failures IS 'Failed attempts per message; at max_attempts once.inbox gets a poison row';
REVOKE ALL ON TABLE once.inbox_failures FROM PUBLIC;
GRANT SELECT ON TABLE once.inbox_failures TO once_admin;

CREATE TABLE once.inbox_subscriptions (
    topic_pattern text          NOT NULL,
    handler       regprocedure  NOT NULL,
    subscribed_at timestamptz   NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    PRIMARY KEY (topic_pattern, handler)
);
COMMENT ON TABLE once.inbox_subscriptions IS 'Topic pattern -> handler(msg once.inbound); handlers run in subscription order';
REVOKE ALL ON TABLE once.inbox_subscriptions FROM PUBLIC;
GRANT SELECT ON TABLE once.inbox_subscriptions TO once_admin;

-- Every backend caches the subscription list; a change invalidates the cache everywhere
-- (relcache invalidation, sent at commit).
CREATE FUNCTION once._inbox_subscriptions_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'once_inbox_subscriptions_changed' LANGUAGE C;
REVOKE ALL ON FUNCTION once._inbox_subscriptions_changed() FROM PUBLIC;
CREATE TRIGGER inbox_subscriptions_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON once.inbox_subscriptions
    FOR EACH STATEMENT EXECUTE FUNCTION once._inbox_subscriptions_changed();

-- No SET search_path on the C functions that run handlers (deliver): handlers are the
-- caller's code and run with the caller's rights. pg_once's own statements are qualified.
CREATE FUNCTION once.receive(source text, message_id text, topic text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'once_receive' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.receive(text, text, text) IS
    'true the first time (source, message_id) is seen: process it in this transaction; false for a duplicate';

CREATE FUNCTION once.deliver(source text, message_id text, topic text, payload jsonb, headers jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'once_deliver_text' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.deliver(text, text, text, jsonb, jsonb) IS
    'receive + every subscribed handler in one transaction: processed, duplicate, no_handler or poison';

CREATE FUNCTION once.deliver(source text, message_id uuid, topic text, payload jsonb, headers jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'once_deliver_uuid' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.deliver(text, uuid, text, jsonb, jsonb) IS
    'once.deliver for uuid message ids (pg_once outbox messages); the id is stored as its canonical text';

CREATE FUNCTION once.inbox_failed(source text, message_id text, error text DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'once_inbox_failed' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.inbox_failed(text, text, text) IS
    'Count a failed attempt (call after the failing transaction rolled back); returns the attempt count';

CREATE FUNCTION once.subscribe(topic_pattern text, handler regprocedure)
RETURNS boolean
AS 'MODULE_PATHNAME', 'once_subscribe' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.subscribe(text, regprocedure) IS
    'Run handler(msg once.inbound) for every delivered message whose topic matches the pattern; false if already subscribed';

CREATE FUNCTION once.unsubscribe(topic_pattern text, handler regprocedure DEFAULT NULL)
RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM once.inbox_subscriptions
         WHERE topic_pattern = $1 AND ($2 IS NULL OR handler = $2)
        RETURNING 1)
    SELECT count(*)::integer FROM gone
$$;
COMMENT ON FUNCTION once.unsubscribe(text, regprocedure) IS
    'Remove the subscription (every handler of the pattern when handler is NULL); returns how many were removed';

CREATE FUNCTION once.inbox_retry(source text, message_id text)
RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH unpoisoned AS (
        DELETE FROM once.inbox
         WHERE source = $1 AND message_id = $2 AND poison
        RETURNING 1),
    forgotten AS (
        DELETE FROM once.inbox_failures
         WHERE source = $1 AND message_id = $2
        RETURNING 1)
    SELECT (SELECT count(*) FROM unpoisoned) + (SELECT count(*) FROM forgotten) > 0
$$;
COMMENT ON FUNCTION once.inbox_retry(text, text) IS
    'Forget the failed attempts of a message so once.deliver runs its handlers again; false if none were recorded';

CREATE FUNCTION once.inbox_configure(source text, retention interval DEFAULT '7 days', max_attempts integer DEFAULT 5)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- the rules of once.receive's source (core/key_validation.hpp)
    IF source IS NULL OR source = '' OR octet_length(source) > 255 OR source ~ '[\x01-\x1f\x7f]' THEN
        RAISE EXCEPTION 'inbox source must be 1 to 255 bytes without control characters'
            USING ERRCODE = 'ON302', DETAIL = format('source was %L.', left(source, 300)),
                  HINT = 'Use the source name that once.receive / once.deliver are called with.';
    END IF;
    IF retention IS NULL OR retention <= '0' THEN
        RAISE EXCEPTION 'retention must be a positive interval'
            USING ERRCODE = '22023', DETAIL = format('retention was %L.', retention),
                  HINT = 'Pass an interval such as ''7 days''.';
    END IF;
    IF max_attempts IS NULL OR max_attempts < 1 THEN
        RAISE EXCEPTION 'max_attempts must be at least 1'
            USING ERRCODE = '22023', DETAIL = format('max_attempts was %L.', max_attempts);
    END IF;
    INSERT INTO once.inbox_sources AS s (source, retention, max_attempts)
    VALUES (inbox_configure.source, inbox_configure.retention, inbox_configure.max_attempts)
    ON CONFLICT ON CONSTRAINT inbox_sources_pkey DO UPDATE
       SET retention = excluded.retention, max_attempts = excluded.max_attempts;
END
$$;
COMMENT ON FUNCTION once.inbox_configure(text, interval, integer) IS
    'Set a source''s retention window (duplicates older than it may run again) and poison threshold';

CREATE VIEW once.inbox_poison AS
SELECT i.source, i.message_id, f.attempts,
       COALESCE(s.max_attempts, 5) AS max_attempts,
       f.last_error, f.first_failed_at, f.last_failed_at
  FROM once.inbox i
  LEFT JOIN once.inbox_failures f
         ON f.source OPERATOR(pg_catalog.=) i.source AND f.message_id OPERATOR(pg_catalog.=) i.message_id
  LEFT JOIN once.inbox_sources s ON s.source OPERATOR(pg_catalog.=) i.source
 WHERE i.poison;
COMMENT ON VIEW once.inbox_poison IS
    'Messages that failed max_attempts times; once.deliver returns poison for them until once.inbox_retry';
REVOKE ALL ON once.inbox_poison FROM PUBLIC;
GRANT SELECT ON once.inbox_poison TO once_admin;

-- Received ids older than their source's window, and failure records older than it, in
-- bounded batches. A duplicate arriving after its id was purged runs again. Poison messages
-- stay until once.inbox_retry: they need a person.
CREATE FUNCTION once.purge_inbox(max_rows integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    oldest_allowed timestamptz;
    purged bigint := 0;
    n bigint;
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RETURN 0;
    END IF;
    -- Nothing younger than the shortest window can go: lets BRIN skip the recent ranges.
    SELECT now() - LEAST(min(retention), '7 days'::interval) INTO oldest_allowed
      FROM once.inbox_sources;
    oldest_allowed := COALESCE(oldest_allowed, now() - '7 days'::interval);

    WITH doomed AS (
        DELETE FROM once.inbox
         WHERE ctid = ANY (ARRAY(
                   SELECT i.ctid
                     FROM once.inbox i
                     LEFT JOIN once.inbox_sources s ON s.source = i.source
                    WHERE i.received_at < oldest_allowed
                      AND i.received_at < now() - COALESCE(s.retention, '7 days')
                      AND NOT i.poison
                    LIMIT max_rows
                    FOR UPDATE OF i SKIP LOCKED))
           AND received_at < oldest_allowed
        RETURNING 1)
    SELECT count(*) INTO n FROM doomed;
    purged := purged + n;

    IF purged < max_rows THEN
        WITH doomed AS (
            DELETE FROM once.inbox_failures
             WHERE ctid = ANY (ARRAY(
                       SELECT f.ctid
                         FROM once.inbox_failures f
                         LEFT JOIN once.inbox_sources s ON s.source = f.source
                        WHERE f.last_failed_at < now() - COALESCE(s.retention, '7 days')
                          AND NOT EXISTS (SELECT FROM once.inbox i
                                           WHERE i.source = f.source AND i.message_id = f.message_id
                                             AND i.poison)
                        LIMIT max_rows - purged
                        FOR UPDATE OF f SKIP LOCKED))
            RETURNING 1)
        SELECT count(*) INTO n FROM doomed;
        purged := purged + n;
    END IF;
    RETURN purged;
END
$$;
COMMENT ON FUNCTION once.purge_inbox(integer) IS
    'Delete received ids (and failure records) older than their source''s retention; at most max_rows rows';

REVOKE ALL ON FUNCTION once.receive(text, text, text),
    once.deliver(text, text, text, jsonb, jsonb),
    once.deliver(text, uuid, text, jsonb, jsonb),
    once.inbox_failed(text, text, text),
    once.subscribe(text, regprocedure),
    once.unsubscribe(text, regprocedure),
    once.inbox_retry(text, text),
    once.inbox_configure(text, interval, integer),
    once.purge_inbox(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.receive(text, text, text),
    once.deliver(text, text, text, jsonb, jsonb),
    once.deliver(text, uuid, text, jsonb, jsonb),
    once.inbox_failed(text, text, text) TO once_consumer;
GRANT EXECUTE ON FUNCTION once.subscribe(text, regprocedure),
    once.unsubscribe(text, regprocedure),
    once.inbox_retry(text, text),
    once.inbox_configure(text, interval, integer),
    once.purge_inbox(integer) TO once_admin;

-- pg_dump keeps the rows: a restored database still knows what it processed, what is poison,
-- and which handler takes which topic.
SELECT pg_catalog.pg_extension_config_dump('once.inbox', '');
SELECT pg_catalog.pg_extension_config_dump('once.inbox_failures', '');
SELECT pg_catalog.pg_extension_config_dump('once.inbox_sources', '');
SELECT pg_catalog.pg_extension_config_dump('once.inbox_subscriptions', '');

-- ---- sql/src/40_saga.sql ----
-- Orchestrated sagas (see docs/sagas.md). The decisions are made by the C++ state machine
-- (core/saga_machine.hpp), called directly by the C++ entry points (extension/src/pg/saga.cpp,
-- saga_store.cpp, saga_tick.cpp), which load and lock the saga with saved plans, store the
-- decision and send the commands through the outbox, all in the caller's transaction.

CREATE TABLE once.saga_definitions (
    name        text        NOT NULL,
    version     integer     NOT NULL,
    definition  jsonb       NOT NULL,   -- normalised: every default filled in
    source      jsonb       NOT NULL,   -- as given to saga_define
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (name, version)
);
COMMENT ON TABLE once.saga_definitions IS 'Saga definitions; a new version per change, running sagas keep theirs';

CREATE TABLE once.saga_instances (
    saga_id     text        PRIMARY KEY,
    name        text        NOT NULL,
    version     integer     NOT NULL,
    input       jsonb,
    data        jsonb       NOT NULL,   -- input merged with every accepted step output
    machine     jsonb       NOT NULL,   -- the state machine's state (core/saga_machine.hpp)
    status      text        NOT NULL CHECK (status IN ('running', 'compensating', 'completed', 'compensated', 'failed')),
    step        text        NOT NULL,   -- the step being executed or compensated
    attempts    integer     NOT NULL DEFAULT 0,
    deadline    timestamptz,            -- when saga_tick must act; NULL only when final or failed
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at timestamptz,
    CONSTRAINT saga_instances_definition_fk FOREIGN KEY (name, version) REFERENCES once.saga_definitions,
    CONSTRAINT saga_instances_deadline_check CHECK
        ((status IN ('running', 'compensating')) = (deadline IS NOT NULL)),
    CONSTRAINT saga_instances_failed_reason CHECK (status <> 'failed' OR last_error IS NOT NULL)
);
COMMENT ON TABLE once.saga_instances IS 'One row per saga; every non-final saga has a deadline, every failed one a reason';
CREATE INDEX saga_instances_due ON once.saga_instances (deadline) WHERE deadline IS NOT NULL;
CREATE INDEX saga_instances_finished ON once.saga_instances (finished_at) WHERE finished_at IS NOT NULL;
ALTER TABLE once.saga_instances SET (fillfactor = 80);

CREATE TABLE once.saga_transitions (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    saga_id     text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    from_status text        NOT NULL,
    to_status   text        NOT NULL,
    step        text,
    event       text        NOT NULL,
    reason      text,
    message_id  text
);
CREATE INDEX saga_transitions_saga ON once.saga_transitions (saga_id, id);

-- Reply message ids already applied, per saga: a redelivered reply changes nothing.
CREATE TABLE once.saga_replies (
    saga_id     text NOT NULL,
    message_id  text NOT NULL,
    PRIMARY KEY (saga_id, message_id)
);

REVOKE ALL ON TABLE once.saga_definitions, once.saga_instances, once.saga_transitions, once.saga_replies FROM PUBLIC;

-- The pure C++ parts.
CREATE FUNCTION once._saga_compile(name text, definition jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'once_saga_compile' LANGUAGE C IMMUTABLE;
CREATE FUNCTION once._saga_mermaid(name text, definition jsonb) RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_diagram' LANGUAGE C IMMUTABLE;

-- Applies one event to a saga (lock, decide, store, send); returns {"result", "status", "step"}.
-- For the events without an entry point of their own: retry, abort, and saga_tick's.
CREATE FUNCTION once._saga_apply(p_saga_id text, event jsonb, output jsonb DEFAULT NULL, message_id text DEFAULT NULL)
RETURNS jsonb
    AS 'MODULE_PATHNAME', 'once_saga_apply' LANGUAGE C VOLATILE;

CREATE FUNCTION once.saga_define(name text, definition jsonb) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    normalized jsonb := once._saga_compile(name, definition);
    s jsonb;
    fn text;
    i integer := 0;
    latest record;
BEGIN
    -- Local functions must exist with the documented signature now, not at 3 a.m.
    FOR s IN SELECT * FROM jsonb_array_elements(normalized->'steps') LOOP
        i := i + 1;
        FOREACH fn IN ARRAY ARRAY[s->'action'->>'function', s->'compensation'->>'function'] LOOP
            CONTINUE WHEN fn IS NULL;
            IF to_regprocedure(fn || '(text, jsonb)') IS NULL THEN
                RAISE EXCEPTION 'invalid saga definition: step % (%): function %(text, jsonb) does not exist',
                        i, s->>'name', fn
                    USING ERRCODE = 'ON401',
                          HINT = 'Create it first: CREATE FUNCTION ' || fn || '(saga_id text, data jsonb) RETURNS jsonb ...';
            END IF;
        END LOOP;
    END LOOP;
    PERFORM pg_advisory_xact_lock(1869505381, hashtext('saga_define:' || name));
    SELECT d.version, d.definition INTO latest
      FROM once.saga_definitions d WHERE d.name = saga_define.name ORDER BY d.version DESC LIMIT 1;
    IF FOUND AND latest.definition = normalized THEN
        RETURN latest.version;   -- defining the same thing again is a no-op
    END IF;
    INSERT INTO once.saga_definitions (name, version, definition, source)
    VALUES (saga_define.name, coalesce(latest.version, 0) + 1, normalized, definition);
    RETURN coalesce(latest.version, 0) + 1;
END
$$;
COMMENT ON FUNCTION once.saga_define(text, jsonb) IS
    'Validate and store a saga definition; returns its version (a new one only when it changed)';

CREATE FUNCTION once.saga_start(name text, saga_id text, input jsonb DEFAULT '{}') RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_start' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_start(text, text, jsonb) IS
    'Start a saga (idempotent on saga_id); the first command is sent in the caller''s transaction';

CREATE FUNCTION once.saga_reply(saga_id text, step text, outcome text, output jsonb DEFAULT NULL,
                                message_id text DEFAULT NULL)
RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_reply' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_reply(text, text, text, jsonb, text) IS
    'Report the outcome of a saga step: applied, duplicate, late (recorded, nothing to do) or rejected (saga failed)';

CREATE FUNCTION once.saga_retry(saga_id text) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, '{"type": "retry"}')->>'status' $$;
COMMENT ON FUNCTION once.saga_retry(text) IS 'Resume a failed saga from where it stopped; returns the new status';

CREATE FUNCTION once.saga_abort(saga_id text, reason text) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, jsonb_build_object('type', 'abort', 'reason', coalesce(reason, 'by hand')))->>'status' $$;
COMMENT ON FUNCTION once.saga_abort(text, text) IS 'Start compensation by hand; returns the new status';

-- Due sagas for saga_tick, locked (SKIP LOCKED: several relays may tick at once).
CREATE FUNCTION once._saga_due(max integer)
RETURNS TABLE (saga_id text, local jsonb, data jsonb)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.saga_id, s.machine->'local', s.data
      FROM once.saga_instances s
     WHERE s.deadline <= now()
     ORDER BY s.deadline
     LIMIT max
       FOR UPDATE SKIP LOCKED
$$;

CREATE FUNCTION once._saga_local(p_saga_id text)
RETURNS TABLE (local jsonb, data jsonb)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.machine->'local', s.data FROM once.saga_instances s
     WHERE s.saga_id = p_saga_id AND s.machine->>'waiting' = 'local' AND s.status IN ('running', 'compensating')
$$;

-- The timer, in C++ (extension/src/pg/saga_tick.cpp). Neither SECURITY DEFINER nor
-- search_path-pinned on purpose: local step functions are the caller's code and run with the
-- caller's rights and search_path. Its own statements run as the extension owner through the
-- internal functions above (granted to nobody) and are fully schema-qualified, operators
-- included, so a hostile search_path changes nothing in them.
CREATE FUNCTION once.saga_tick(max integer) RETURNS integer
    AS 'MODULE_PATHNAME', 'once_saga_tick' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_tick(integer) IS
    'Timeouts (resend with the same key), retries with backoff and local-function steps of due sagas; returns how many were handled';

-- saga_tick() = saga_tick(1000). An overload rather than a parameter default, so that
-- to_regprocedure('once.saga_tick()') finds it (once-relay checks for it that way).
CREATE FUNCTION once.saga_tick() RETURNS integer
    AS 'MODULE_PATHNAME', 'once_saga_tick' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_tick() IS 'once.saga_tick(1000)';

CREATE VIEW once.sagas AS
SELECT s.saga_id, s.name, s.version, s.status, s.step, s.data, s.input, s.deadline, s.attempts,
       s.last_error, s.created_at, s.updated_at, s.finished_at
  FROM once.saga_instances s;
COMMENT ON VIEW once.sagas IS 'Sagas: status, current step, data, deadline, attempts, last error';

CREATE VIEW once.saga_history AS
SELECT t.saga_id, t.at, t.from_status, t.to_status, t.step, t.event, t.reason, t.message_id, t.id
  FROM once.saga_transitions t;
COMMENT ON VIEW once.saga_history IS 'Every saga transition with time, reason and the reply message id';

CREATE FUNCTION once.saga_diagram(name text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    def jsonb;
BEGIN
    SELECT d.definition INTO def FROM once.saga_definitions d
     WHERE d.name = saga_diagram.name ORDER BY d.version DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'saga definition not found'
            USING ERRCODE = 'ON402', DETAIL = format('No saga is defined with the name %s.', quote_literal(left(name, 80)));
    END IF;
    RETURN once._saga_mermaid(name, def);
END
$$;
COMMENT ON FUNCTION once.saga_diagram(text) IS 'Mermaid state diagram of the latest version of a saga definition';

-- once.saga_retention (a registered PGC_SUSET setting, at least 1 minute, default 7 days).
-- A C function: calling it loads the library, which registers the setting before it is read.
CREATE FUNCTION once._saga_retention() RETURNS interval
AS 'MODULE_PATHNAME', 'once_saga_retention' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION once._saga_retention() FROM PUBLIC;

-- Finished sagas (completed/compensated) older than once.saga_retention (default 7 days).
CREATE FUNCTION once.purge_sagas(max_rows integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    retention interval := once._saga_retention();  -- the registered setting (settings.cpp)
    ids text[];
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RETURN 0;
    END IF;
    SELECT array_agg(s.saga_id) INTO ids FROM (
        SELECT s.saga_id FROM once.saga_instances s
         WHERE s.finished_at < now() - retention
         LIMIT max_rows FOR UPDATE SKIP LOCKED) s;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM once.saga_transitions t WHERE t.saga_id = ANY (ids);
    DELETE FROM once.saga_replies r WHERE r.saga_id = ANY (ids);
    DELETE FROM once.saga_instances s WHERE s.saga_id = ANY (ids);
    RETURN cardinality(ids);
END
$$;

-- The built-in inbox handler for replies arriving through a relay: subscribe it to the
-- definition's reply_to topic, e.g.
--   SELECT once.subscribe('saga.campus_cafe_order.reply', 'once.saga_reply_handler(once.inbound)');
-- Reply payload: {"saga_id": "...", "step": "...", "outcome": "succeeded", "output": {...}}
-- (output optional; output.error carries the failure reason).
CREATE FUNCTION once.saga_reply_handler(msg once.inbound) RETURNS void
    AS 'MODULE_PATHNAME', 'once_saga_reply_handler' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once.saga_reply_handler(once.inbound) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.saga_reply_handler(once.inbound) TO once_consumer;


REVOKE ALL ON FUNCTION once._saga_compile(text, jsonb),
    once._saga_mermaid(text, jsonb),
    once._saga_apply(text, jsonb, jsonb, text), once.saga_define(text, jsonb),
    once.saga_start(text, text, jsonb), once.saga_reply(text, text, text, jsonb, text),
    once.saga_retry(text), once.saga_abort(text, text), once._saga_due(integer), once._saga_local(text),
    once.saga_tick(integer), once.saga_tick(), once.saga_diagram(text), once.purge_sagas(integer) FROM PUBLIC;
REVOKE ALL ON once.sagas, once.saga_history FROM PUBLIC;

GRANT EXECUTE ON FUNCTION once.saga_define(text, jsonb), once.saga_retry(text), once.saga_abort(text, text),
    once.saga_diagram(text) TO once_admin;
GRANT EXECUTE ON FUNCTION once.saga_start(text, text, jsonb) TO once_producer;
GRANT EXECUTE ON FUNCTION once.saga_reply(text, text, text, jsonb, text) TO once_consumer;
-- Internal _saga_* functions are granted to nobody: saga_tick calls them as the owner, so a
-- relay can drive the timer but cannot apply an event (abort, a forged reply) of its own.
GRANT EXECUTE ON FUNCTION once.saga_tick(integer), once.saga_tick() TO once_relay;
GRANT SELECT ON once.sagas, once.saga_history TO once_admin, once_producer;

-- ---- sql/src/90_maintenance.sql ----
-- Maintenance: once.purge removes what has outlived its retention, in bounded batches.

CREATE FUNCTION once.purge(max_rows integer DEFAULT 10000) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    purged bigint := 0;
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be a positive number'
            USING ERRCODE = '22023', DETAIL = pg_catalog.format('max_rows was %s.', max_rows);
    END IF;
    -- Each concern gets what is left of the budget, in this order.
    purged := purged + once.purge_keys(max_rows - purged::integer);
    purged := purged + once.purge_outbox(max_rows - purged::integer);
    purged := purged + once.purge_inbox(max_rows - purged::integer);   -- 0 when nothing is left
    purged := purged + once.purge_sagas(max_rows - purged::integer);
    RETURN purged;
END
$$;
COMMENT ON FUNCTION once.purge(integer) IS
    'Delete expired idempotency keys, expired delivered-outbox history, inbox ids past their source''s retention (and, later, finished sagas); at most max_rows rows per call';

REVOKE ALL ON FUNCTION once.purge(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.purge(integer) TO once_relay, once_admin;
