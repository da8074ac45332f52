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
