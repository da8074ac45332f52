-- pg_once 0.1 -> 0.2. Written by hand: every change made in sql/src since 0.1 was released,
-- in the order the sections were added. The upgrade test (tests/upgrade/run.sh) checks that
-- a database updated with this script has exactly the catalog of a fresh 0.2 install, and
-- that data written by 0.1 keeps working.

\echo Use "ALTER EXTENSION pg_once UPDATE TO '0.2'" to load this file. \quit

-- ---------------------------------------------------------------------------------------
-- Internal helpers are named with a leading underscore, so that what is API and what is
-- not can be told from the name (\df once.*). RENAME keeps their privileges and comments;
-- the PL/pgSQL functions that call them are replaced with bodies using the new names.
ALTER FUNCTION once.outbox_topics_match(text[], text) RENAME TO _outbox_topics_match;
ALTER FUNCTION once.outbox_position(timestamptz) RENAME TO _outbox_position;
ALTER FUNCTION once.outbox_validate_policy(text, integer, interval, interval, interval)
    RENAME TO _outbox_validate_policy;
ALTER FUNCTION once.check_dead_letter_ids(uuid[]) RENAME TO _check_dead_letter_ids;
ALTER FUNCTION once.inbox_subscriptions_changed() RENAME TO _inbox_subscriptions_changed;

CREATE OR REPLACE FUNCTION once.topic_policy(
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

CREATE OR REPLACE FUNCTION once.redrive(ids uuid[]) RETURNS integer
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

CREATE OR REPLACE FUNCTION once.discard(ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
BEGIN
    PERFORM once._check_dead_letter_ids(ids);
    DELETE FROM once.outbox WHERE id = ANY (ids) AND dead_at IS NOT NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- ---------------------------------------------------------------------------------------
-- Security (issue 11, finding 3): idempotency keys belong to the role that stored them.
-- Keys stored by 0.1 have no owner (NULL) and stay usable by every producer, as they were,
-- until they expire (README "Who may use a key").
ALTER TABLE once.keys ADD COLUMN owner oid;

-- ---------------------------------------------------------------------------------------
-- Security (issue 11, finding 8): once.saga_retention is a registered PGC_SUSET setting,
-- read through a C function so that the library (and the setting) is loaded before use.
-- once.saga_retention (a registered PGC_SUSET setting, at least 1 minute, default 7 days).
-- A C function: calling it loads the library, which registers the setting before it is read.
CREATE FUNCTION once._saga_retention() RETURNS interval
AS 'MODULE_PATHNAME', 'once_saga_retention' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION once._saga_retention() FROM PUBLIC;

-- Finished sagas (completed/compensated) older than once.saga_retention (default 7 days).
CREATE OR REPLACE FUNCTION once.purge_sagas(max_rows integer) RETURNS bigint
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

-- ---------------------------------------------------------------------------------------
-- Security (issue 11, finding 5): once.blocked_keys also shows keys held back by a delayed
-- message (columns reason, held_message_id, held_until appended).
-- A key is blocked by its oldest message when that one is dead, or when it is delayed
-- (deliver_at in the future, never delivered) and others wait behind it: one producer's
-- delayed message holds back another's later ones of the same key, and that must show
-- (issue 11, finding 5). reason, held_message_id and held_until came in 0.2 (appended).
CREATE OR REPLACE VIEW once.blocked_keys AS
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
-- Sagas: the relay drives the timer but cannot act as admin or consumer (issue 11, findings
-- 7 and 9). saga_tick becomes C++ (extension/src/pg/saga_tick.cpp): its internal statements
-- run as the extension owner and are fully schema-qualified, so the internal _saga_*
-- functions are granted to nobody and a hostile search_path cannot redirect the timer.
-- Local step functions still run as the tick's caller, under its search_path.
REVOKE EXECUTE ON FUNCTION once._saga_due(integer), once._saga_local(text),
    once._saga_apply(text, jsonb, jsonb, text) FROM once_relay;

CREATE OR REPLACE FUNCTION once.saga_tick(max integer) RETURNS integer
    AS 'MODULE_PATHNAME', 'once_saga_tick' LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION once.saga_tick() RETURNS integer
    AS 'MODULE_PATHNAME', 'once_saga_tick' LANGUAGE C VOLATILE;

-- ---------------------------------------------------------------------------------------
-- Sagas: the operations are C++ entry points that call the state machine directly with saved
-- plans (issue 12), instead of PL/pgSQL around a jsonb round trip into once._saga_decide.
-- Same signatures and privileges; the PL/pgSQL helpers they replace are dropped. Sagas
-- started under 0.1 keep their stored state, which the C++ code reads as before.
CREATE OR REPLACE FUNCTION once._saga_apply(p_saga_id text, event jsonb, output jsonb DEFAULT NULL, message_id text DEFAULT NULL)
RETURNS jsonb
    AS 'MODULE_PATHNAME', 'once_saga_apply' LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION once.saga_start(name text, saga_id text, input jsonb DEFAULT '{}') RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_start' LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION once.saga_reply(saga_id text, step text, outcome text, output jsonb DEFAULT NULL,
                                message_id text DEFAULT NULL)
RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_reply' LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION once.saga_reply_handler(msg once.inbound) RETURNS void
    AS 'MODULE_PATHNAME', 'once_saga_reply_handler' LANGUAGE C VOLATILE;
DROP FUNCTION once._saga_store(once.saga_instances, jsonb, jsonb, text);
DROP FUNCTION once._saga_emit(text, text, jsonb, jsonb, text);
DROP FUNCTION once._saga_deadline(jsonb);
DROP FUNCTION once._saga_decide(jsonb, jsonb, jsonb);
DROP FUNCTION once._saga_check_id(text);
DROP FUNCTION once._saga_unknown(text);
DROP FUNCTION once._saga_ms(timestamptz);

-- ---------------------------------------------------------------------------------------
-- Outbox under load (issue 10): a claim for some topics walks only those topics' messages
-- (index on topic and claim position), and once.claim_locked takes messages in the caller's
-- transaction with no lease write (the lock is the lease).
CREATE INDEX outbox_topic ON once.outbox (topic, (COALESCE(pos, id)));

CREATE FUNCTION once.claim_locked(
    relay  text,
    batch  integer DEFAULT 100,
    topics text[]  DEFAULT NULL)
RETURNS SETOF once.message
AS 'MODULE_PATHNAME', 'once_claim_locked' LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION once.claim_locked(text, integer, text[]) IS
    'Take up to batch ready messages in the caller''s transaction (no lease: the transaction''s lock is it); ack, nack or dead each before COMMIT, or ROLLBACK to give them all back';
REVOKE ALL ON FUNCTION once.claim_locked(text, integer, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.claim_locked(text, integer, text[]) TO once_relay;

-- ---------------------------------------------------------------------------------------
-- Outbox under load (issue 10): a keyed message that waits behind an earlier message of its
-- key gets the waiting position (the greatest uuid), outside every range a claim reads; the
-- head's ack or discard promotes the next one at commit. Messages written by 0.1 keep their
-- positions: claims still check them one by one, as 0.1 did, until they are delivered.
-- Internal: once.discard removed messages of these keys (their next messages are promoted at
-- commit, 0.2).
CREATE FUNCTION once._outbox_keys_released(keys text[]) RETURNS void
AS 'MODULE_PATHNAME', 'once_outbox_keys_released' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once._outbox_keys_released(text[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION once.discard(ids uuid[]) RETURNS integer
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
