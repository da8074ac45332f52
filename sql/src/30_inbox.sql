-- Inbox: duplicate-proof consumption (see docs/inbox.md).
--   once.receive          record (source, message_id); true the first time, false for a duplicate
--   once.subscribe        route topics (NATS-style patterns) to handler(msg once.inbound)
--   once.deliver          receive + every matching handler in the caller's transaction
--   once.inbox_failed     count a failed attempt after the failing transaction rolled back;
--                         after max_attempts the message is poison until once.inbox_retry,
--                         which runs it again from the copy inbox_failed kept, if given one

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
    -- (0.3) the message itself, when the caller of once.inbox_failed passed it (once-relay
    -- does): once.inbox_retry delivers a poison message again from this copy. topic is NULL
    -- when there is no copy.
    topic           text,
    payload         jsonb,
    headers         jsonb,
    PRIMARY KEY (source, message_id)
);
COMMENT ON TABLE once.inbox_failures IS 'Failed attempts per message, with a copy of the message when given; at max_attempts once.inbox gets a poison row';
REVOKE ALL ON TABLE once.inbox_failures FROM PUBLIC;
GRANT SELECT ON TABLE once.inbox_failures TO once_admin;

CREATE TABLE once.inbox_subscriptions (
    topic_pattern text          NOT NULL,
    handler       regprocedure  NOT NULL,
    subscribed_at timestamptz   NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    run_as        regrole,      -- (0.3) the role the handler runs as; NULL: the handler's owner
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

-- A dropped handler takes its subscriptions with it: this event trigger runs
-- after every DROP that removes a function (DROP FUNCTION, DROP SCHEMA ... CASCADE, DROP
-- OWNED) and deletes the subscriptions naming it, with a WARNING per subscription. Messages
-- on their topics then get no_handler (nothing recorded; the relay retries them) until a
-- handler is subscribed again, instead of a subscription naming a function oid that a later,
-- unrelated function could receive. A pg_depend entry could not do this: a subscription is a
-- row, not a catalog object, and the extension depending on the handler would make DROP
-- FUNCTION ... CASCADE drop pg_once. Event triggers do not fire in single-user mode, with
-- session_replication_role = replica or (PostgreSQL 17+) event_triggers = off: such a drop
-- leaves a subscription whose handler is gone, which deliver reports (ON305) and the console
-- lists (once.console_subscriptions).
CREATE FUNCTION once._inbox_handler_dropped() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    gone record;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_event_trigger_dropped_objects() d
                    WHERE d.classid = 'pg_catalog.pg_proc'::regclass
                      AND EXISTS (SELECT FROM once.inbox_subscriptions s WHERE s.handler::oid = d.objid)) THEN
        RETURN;   -- the usual case: no statement on inbox_subscriptions, no cache invalidation
    END IF;
    FOR gone IN
        DELETE FROM once.inbox_subscriptions s
         USING pg_event_trigger_dropped_objects() d
         WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND s.handler::oid = d.objid
        RETURNING s.topic_pattern, d.object_identity
    LOOP
        RAISE WARNING 'inbox subscription % removed: its handler % was dropped',
                quote_literal(gone.topic_pattern), gone.object_identity
            USING HINT = 'Messages on its topics get no_handler (the relay retries them) until once.subscribe names a handler again.';
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION once._inbox_handler_dropped() FROM PUBLIC;
CREATE EVENT TRIGGER once_inbox_handler_dropped ON sql_drop
    EXECUTE FUNCTION once._inbox_handler_dropped();

-- No SET search_path on the C functions that run handlers (deliver): handlers run as their
-- run_as role or their owner (extension/src/pg/common/run_as.hpp), restricted and under a search_path
-- pinned for the call (restricted_call.hpp). pg_once's own statements are qualified.
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

CREATE FUNCTION once.inbox_failed(source text, message_id text, error text, topic text, payload jsonb, headers jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'once_inbox_failed' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.inbox_failed(text, text, text, text, jsonb, jsonb) IS
    'once.inbox_failed keeping a copy of the message, so that once.inbox_retry can deliver it again if it becomes poison';

CREATE FUNCTION once.subscribe(topic_pattern text, handler regprocedure, run_as regrole DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'once_subscribe' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.subscribe(text, regprocedure, regrole) IS
    'Run handler(msg once.inbound), as run_as (NULL: its owner), for every delivered message whose topic matches the pattern; false if already subscribed so';

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
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    copy record;
    unpoisoned boolean;
BEGIN
    DELETE FROM once.inbox i
     WHERE i.source = inbox_retry.source AND i.message_id = inbox_retry.message_id AND i.poison;
    unpoisoned := FOUND;
    DELETE FROM once.inbox_failures f
     WHERE f.source = inbox_retry.source AND f.message_id = inbox_retry.message_id
    RETURNING f.topic, f.payload, f.headers INTO copy;
    IF NOT FOUND THEN
        RETURN unpoisoned;
    END IF;
    -- A poison message with a stored copy runs again now, in the caller's transaction, as
    -- once.deliver runs it (each handler as its run_as role or owner, restricted): a relay
    -- would never bring it again, its source was acknowledged. A handler error aborts the
    -- caller's transaction and the message stays poison.
    IF unpoisoned AND copy.topic IS NOT NULL THEN
        IF once.deliver(inbox_retry.source, inbox_retry.message_id, copy.topic, copy.payload, copy.headers)
           OPERATOR(pg_catalog.=) 'no_handler' THEN
            RAISE EXCEPTION 'no inbox handler is subscribed for topic %', quote_literal(copy.topic)
                USING ERRCODE = 'ON307',
                      DETAIL = format('Message %s of source %s stays poison.', inbox_retry.message_id, inbox_retry.source),
                      HINT = 'Subscribe a handler for the topic (once.subscribe), then retry.';
        END IF;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION once.inbox_retry(text, text) IS
    'Forget the failed attempts of a message; a poison message with a stored copy runs its handlers again now, in this transaction; false if nothing was recorded';

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
       f.last_error, f.first_failed_at, f.last_failed_at,
       COALESCE(i.topic, f.topic) AS topic, f.payload, f.headers,
       f.topic IS NOT NULL AS has_copy
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
    once.inbox_failed(text, text, text, text, jsonb, jsonb),
    once.subscribe(text, regprocedure, regrole),
    once.unsubscribe(text, regprocedure),
    once.inbox_retry(text, text),
    once.inbox_configure(text, interval, integer),
    once.purge_inbox(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.receive(text, text, text),
    once.deliver(text, text, text, jsonb, jsonb),
    once.deliver(text, uuid, text, jsonb, jsonb),
    once.inbox_failed(text, text, text),
    once.inbox_failed(text, text, text, text, jsonb, jsonb) TO once_consumer;
GRANT EXECUTE ON FUNCTION once.subscribe(text, regprocedure, regrole),
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
