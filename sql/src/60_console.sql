-- once-console (docs/console.md): its two roles, the audit table of its actions, and the
-- read functions its pages use. Every read is bounded (LIMIT, keyset paging, counts capped
-- at a given number), so a page costs the same with a 1M-message backlog as with ten.
--
--   once_console_viewer  may call the console_* read functions, nothing else
--   once_console_admin   viewer + the console_* action functions (redrive, discard, saga
--                        retry/abort, inbox retry, key release), each of which records itself
--                        in once.console_actions
--
-- once-console logs in with one database role that has once_console_admin and runs each
-- request under SET ROLE once_console_viewer or once_console_admin, by the console user's
-- role: a viewer's request cannot act even if the console had a bug.

DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['once_console_viewer', 'once_console_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END
$roles$;
GRANT USAGE ON SCHEMA once TO once_console_viewer, once_console_admin;
GRANT once_console_viewer TO once_console_admin;

-- Who did what, when, to which ids. Written only by the console_* action functions.
CREATE TABLE once.console_actions (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    actor      text        NOT NULL,   -- the console user (a name from its credentials file)
    db_role    name        NOT NULL,   -- the database login that ran it (session_user)
    action     text        NOT NULL CHECK (action IN ('redrive', 'discard', 'saga_retry', 'saga_abort',
                                                          'inbox_retry', 'key_release',
                                                          'redrive_matching', 'discard_matching')),
    ids        text[]      NOT NULL,
    affected   integer     NOT NULL,   -- dead letters changed; 1 or 0 for the others
    result     text                    -- a saga's new status, an abort's reason
);
COMMENT ON TABLE once.console_actions IS 'Audit log of once-console: every action, with who, when and which ids';
REVOKE ALL ON TABLE once.console_actions FROM PUBLIC;
GRANT SELECT ON TABLE once.console_actions TO once_admin;

-- Dead letters in the order the console lists them (newest first, keyset paging); only dead
-- rows are in it, so claims and acks never touch it.
CREATE INDEX outbox_dead ON once.outbox (dead_at, id) WHERE dead_at IS NOT NULL;
-- Sagas listed newest first, all or by status.
CREATE INDEX saga_instances_created ON once.saga_instances (created_at, saga_id);
CREATE INDEX saga_instances_status ON once.saga_instances (status, created_at, saga_id);
-- Poison inbox messages (only those rows: receives of healthy messages never touch it).
CREATE INDEX inbox_poisoned ON once.inbox (source, message_id) WHERE poison;

-- ----------------------------------------------------------------------------- reads

-- The overview's topics: at most 200, each counted up to 1000 (once._topic_counts).
CREATE FUNCTION once.console_topics()
RETURNS TABLE (topic text, ready bigint, delayed bigint, in_flight bigint, blocked bigint, dead bigint,
               oldest_ready timestamptz, capped boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM once._topic_counts(200, 1000) $$;
COMMENT ON FUNCTION once.console_topics() IS
    'once-console overview: per topic ready, delayed, in flight, blocked, dead (each counted up to 1000) and the oldest ready message';

-- The relays connected to this database now: once-relay names its connections
-- "once-relay <name>" (application_name). last_activity is the latest state change of any of
-- a relay's connections (a claim, an ack, a poll). Reads pg_stat_activity as the extension's
-- owner, so the console sees the relays of every role, and nothing but these columns.
CREATE FUNCTION once.console_relays()
RETURNS TABLE (relay text, connections bigint, client text, connected_since timestamptz, last_activity timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT substr(a.application_name, 12), count(*),
           string_agg(DISTINCT COALESCE(host(a.client_addr), 'local'), ', '),
           min(a.backend_start), max(a.state_change)
      FROM pg_catalog.pg_stat_activity a
     WHERE a.datname = current_database() AND a.application_name LIKE 'once-relay %'
     GROUP BY a.application_name
     ORDER BY 1
     LIMIT 100
$$;
COMMENT ON FUNCTION once.console_relays() IS 'once-console: relays connected to this database, with their last activity';

-- Dead letters, newest first; filters are optional (NULL); page after (before_dead, before_id).
-- With a key, its few messages come from outbox_key; otherwise outbox_dead is walked newest
-- first (two statements: one plan with "p_key IS NULL OR" could use neither index well).
CREATE FUNCTION once.console_dead_letters(
    p_topic text, p_key text, p_error text,
    before_dead timestamptz DEFAULT NULL, before_id uuid DEFAULT NULL, max_rows integer DEFAULT 50)
RETURNS TABLE (id uuid, topic text, key text, attempt integer, last_error text,
               created_at timestamptz, dead_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_key IS NOT NULL THEN
        RETURN QUERY
        SELECT o.id, o.topic, o.key, o.attempt, left(o.last_error, 300), o.created_at, o.dead_at
          FROM once.outbox o
         WHERE o.key = p_key AND o.dead_at IS NOT NULL
           AND (before_dead IS NULL OR (o.dead_at, o.id) < (before_dead, before_id))
           AND (p_topic IS NULL OR o.topic = p_topic)
           AND (p_error IS NULL OR strpos(lower(o.last_error), lower(p_error)) > 0)
         ORDER BY o.dead_at DESC, o.id DESC
         LIMIT least(greatest(max_rows, 1), 500);
    ELSE
        RETURN QUERY
        SELECT o.id, o.topic, o.key, o.attempt, left(o.last_error, 300), o.created_at, o.dead_at
          FROM once.outbox o
         WHERE o.dead_at IS NOT NULL
           AND (o.dead_at, o.id) < (COALESCE(before_dead, 'infinity'),
                                    COALESCE(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
           AND (p_topic IS NULL OR o.topic = p_topic)
           AND (p_error IS NULL OR strpos(lower(o.last_error), lower(p_error)) > 0)
         ORDER BY o.dead_at DESC, o.id DESC
         LIMIT least(greatest(max_rows, 1), 500);
    END IF;
END
$$;
COMMENT ON FUNCTION once.console_dead_letters(text, text, text, timestamptz, uuid, integer) IS
    'once-console: a page of dead letters, newest first, filtered by topic, key and error text';

-- One outbox message (dead or not) with how many messages of its key wait behind it (up to 1000).
CREATE FUNCTION once.console_message(p_id uuid)
RETURNS TABLE (id uuid, topic text, key text, payload jsonb, headers jsonb, attempt integer,
               last_error text, created_at timestamptz, visible_at timestamptz, dead_at timestamptz,
               relay text, waiting bigint, is_head boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT o.id, o.topic, o.key, o.payload, o.headers, o.attempt, o.last_error, o.created_at,
           o.visible_at, o.dead_at, o.relay,
           CASE WHEN o.key IS NOT NULL THEN
               (SELECT count(*) FROM (SELECT 1 FROM once.outbox w
                                       WHERE w.key = o.key AND w.key_owner = o.key_owner AND w.key_seq > o.key_seq LIMIT 1000) x) END,
           o.key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = o.key AND e.key_owner = o.key_owner AND e.key_seq < o.key_seq)
      FROM once.outbox o
     WHERE o.id = p_id
$$;
COMMENT ON FUNCTION once.console_message(uuid) IS 'once-console: one outbox message with payload, headers and its key''s queue';

-- Keys held back by their head: a dead head (newest first), then a delayed head (deliver_at
-- in the future, never delivered) with messages behind it. waiting is counted up to 1000.
CREATE FUNCTION once.console_blocked_keys(max_rows integer DEFAULT 100)
RETURNS TABLE (key text, topic text, reason text, head_id uuid, head_error text, dead_at timestamptz,
               held_until timestamptz, waiting bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    (SELECT h.key, h.topic, 'dead', h.id, left(h.last_error, 300), h.dead_at, NULL::timestamptz,
            (SELECT count(*) FROM (SELECT 1 FROM once.outbox w
                                    WHERE w.key = h.key AND w.key_owner = h.key_owner AND w.key_seq > h.key_seq LIMIT 1000) x)
       FROM once.outbox h
      WHERE h.dead_at IS NOT NULL AND h.key IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = h.key AND e.key_owner = h.key_owner AND e.key_seq < h.key_seq)
      ORDER BY h.dead_at DESC, h.id DESC
      LIMIT least(greatest(max_rows, 1), 500))
    UNION ALL
    (SELECT h.key, h.topic, 'delayed', h.id, NULL, NULL, h.visible_at,
            (SELECT count(*) FROM (SELECT 1 FROM once.outbox w
                                    WHERE w.key = h.key AND w.key_owner = h.key_owner AND w.key_seq > h.key_seq LIMIT 1000) x)
       FROM once.outbox h
      WHERE h.pos > (SELECT once._outbox_position(now()))
        AND h.pos < once._waiting_position()
        AND h.key IS NOT NULL AND h.attempt = 0 AND h.dead_at IS NULL AND h.visible_at > now()
        AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = h.key AND e.key_owner = h.key_owner AND e.key_seq < h.key_seq)
        AND EXISTS (SELECT 1 FROM once.outbox w WHERE w.key = h.key AND w.key_owner = h.key_owner AND w.key_seq > h.key_seq)
      ORDER BY h.pos
      LIMIT least(greatest(max_rows, 1), 500))
$$;
COMMENT ON FUNCTION once.console_blocked_keys(integer) IS
    'once-console: ordering keys held back by a dead or delayed head, with how many messages wait behind it';

-- Sagas, newest first, optionally of one definition and status; page after (before_created,
-- before_id). By status through saga_instances_status, otherwise saga_instances_created.
CREATE FUNCTION once.console_sagas(
    p_name text, p_status text, before_created timestamptz DEFAULT NULL, before_id text DEFAULT NULL,
    max_rows integer DEFAULT 50)
RETURNS TABLE (saga_id text, name text, version integer, status text, step text, attempts integer,
               last_error text, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_status IS NOT NULL THEN
        RETURN QUERY
        SELECT s.saga_id, s.name, s.version, s.status, s.step, s.attempts, left(s.last_error, 300),
               s.created_at, s.updated_at
          FROM once.saga_instances s
         WHERE s.status = p_status
           AND (s.created_at, s.saga_id) < (COALESCE(before_created, 'infinity'), COALESCE(before_id, ''))
           AND (p_name IS NULL OR s.name = p_name)
         ORDER BY s.status DESC, s.created_at DESC, s.saga_id DESC
         LIMIT least(greatest(max_rows, 1), 500);
    ELSE
        RETURN QUERY
        SELECT s.saga_id, s.name, s.version, s.status, s.step, s.attempts, left(s.last_error, 300),
               s.created_at, s.updated_at
          FROM once.saga_instances s
         WHERE (s.created_at, s.saga_id) < (COALESCE(before_created, 'infinity'), COALESCE(before_id, ''))
           AND (p_name IS NULL OR s.name = p_name)
         ORDER BY s.created_at DESC, s.saga_id DESC
         LIMIT least(greatest(max_rows, 1), 500);
    END IF;
END
$$;
COMMENT ON FUNCTION once.console_sagas(text, text, timestamptz, text, integer) IS
    'once-console: a page of sagas, newest first, by definition and status';

-- Sagas per status, each counted up to 1000 (index-only on saga_instances_status).
CREATE FUNCTION once.console_saga_counts()
RETURNS TABLE (status text, n bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT st.status,
           (SELECT count(*) FROM (SELECT 1 FROM once.saga_instances s WHERE s.status = st.status LIMIT 1000) x)
      FROM unnest(ARRAY['running', 'compensating', 'failed', 'completed', 'compensated']) AS st(status)
$$;
COMMENT ON FUNCTION once.console_saga_counts() IS 'once-console: sagas per status, each counted up to 1000';

-- Saga definitions: the latest version of each.
CREATE FUNCTION once.console_saga_definitions()
RETURNS TABLE (name text, version integer, created_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT DISTINCT ON (d.name) d.name, d.version, d.created_at
      FROM once.saga_definitions d
     ORDER BY d.name, d.version DESC
$$;
COMMENT ON FUNCTION once.console_saga_definitions() IS 'once-console: saga definitions, latest version each';
-- One saga with its definition, its last error and the cause of its failure
-- (once.saga_instances.failure_cause: the card was declined), which the last error (a
-- compensation that timed out later) hides. A saga is (name, saga_id): ids are unique per
-- definition (docs/sagas.md).
CREATE FUNCTION once.console_saga(p_name text, p_saga_id text)
RETURNS TABLE (saga_id text, name text, version integer, status text, step text, attempts integer,
               input jsonb, data jsonb, last_error text, cause text, deadline timestamptz,
               created_at timestamptz, updated_at timestamptz, finished_at timestamptz, definition jsonb)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.saga_id, s.name, s.version, s.status, s.step, s.attempts, s.input, s.data, s.last_error,
           s.failure_cause, s.deadline, s.created_at, s.updated_at, s.finished_at, d.definition
      FROM once.saga_instances s
      JOIN once.saga_definitions d ON d.name = s.name AND d.version = s.version
     WHERE s.name = p_name AND s.saga_id = p_saga_id
$$;
COMMENT ON FUNCTION once.console_saga(text, text) IS 'once-console: one saga with input, data, definition, last error and the failure''s cause';

CREATE FUNCTION once.console_saga_history(p_name text, p_saga_id text, max_rows integer DEFAULT 500)
RETURNS TABLE (id bigint, at timestamptz, from_status text, to_status text, step text, event text,
               reason text, message_id text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.id, t.at, t.from_status, t.to_status, t.step, t.event, t.reason, t.message_id
      FROM once.saga_transitions t
     WHERE t.saga_id = p_saga_id AND t.name = p_name
     ORDER BY t.id
     LIMIT least(greatest(max_rows, 1), 5000)
$$;
COMMENT ON FUNCTION once.console_saga_history(text, text, integer) IS 'once-console: a saga''s transitions in order';

CREATE FUNCTION once.console_recent_actions(before_id bigint DEFAULT NULL, max_rows integer DEFAULT 50)
RETURNS SETOF once.console_actions
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT a.* FROM once.console_actions a
     WHERE before_id IS NULL OR a.id < before_id
     ORDER BY a.id DESC
     LIMIT least(greatest(max_rows, 1), 500)
$$;
COMMENT ON FUNCTION once.console_recent_actions(bigint, integer) IS 'once-console: the audit log, newest first';

-- Poison inbox messages by source, after (after_source, after_id).
CREATE FUNCTION once.console_inbox_poison(after_source text DEFAULT NULL, after_id text DEFAULT NULL,
                                          max_rows integer DEFAULT 50)
RETURNS TABLE (source text, message_id text, topic text, received_at timestamptz, attempts integer,
               last_error text, first_failed_at timestamptz, last_failed_at timestamptz, has_copy boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.source, i.message_id, COALESCE(i.topic, f.topic), i.received_at, f.attempts, left(f.last_error, 300),
           f.first_failed_at, f.last_failed_at, f.topic IS NOT NULL
      FROM once.inbox i
      LEFT JOIN once.inbox_failures f ON f.source = i.source AND f.message_id = i.message_id
     WHERE i.poison
       AND (after_source IS NULL OR (i.source, i.message_id) > (after_source, after_id))
     ORDER BY i.source, i.message_id
     LIMIT least(greatest(max_rows, 1), 500)
$$;
COMMENT ON FUNCTION once.console_inbox_poison(text, text, integer) IS
    'once-console: a page of poison inbox messages with their failures';

-- One idempotency key, without its stored response (that may hold another role's data):
-- only the response's size. A key's identity is (scope, key, owner): one row per role that
-- stored it (owner_id 0, owner NULL: a key stored by 0.1), in the order of owner_id.
CREATE FUNCTION once.console_key(p_scope text, p_key text)
RETURNS TABLE (scope text, key text, state text, status integer, recovery_point text, attempt integer,
               locked_until timestamptz, created_at timestamptz, expires_at timestamptz, owner name,
               expired boolean, response_bytes integer, owner_id oid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT k.scope, k.key, k.state, k.status, k.recovery_point, k.attempt, k.locked_until, k.created_at,
           k.expires_at, (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid = k.owner),
           k.expires_at <= now(), pg_catalog.octet_length(k.response::text), k.owner
      FROM once.keys k
     WHERE k.scope = p_scope AND k.key = p_key
     ORDER BY k.owner
$$;
COMMENT ON FUNCTION once.console_key(text, text) IS
    'once-console: one idempotency key''s state (not its response), a row per owner';

-- ----------------------------------------------------------------------------- actions

CREATE FUNCTION once._console_check_actor(actor text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF actor IS NULL OR length(actor) NOT BETWEEN 1 AND 63 THEN
        RAISE EXCEPTION 'actor must be 1..63 characters'
            USING ERRCODE = '22023', HINT = 'Pass the name of the console user who acts.';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION once._console_check_actor(text) FROM PUBLIC;

CREATE FUNCTION once.console_redrive(actor text, ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
BEGIN
    PERFORM once._console_check_actor(actor);
    n := once.redrive(ids);
    INSERT INTO once.console_actions (actor, db_role, action, ids, affected)
    VALUES (actor, session_user, 'redrive', ids::text[], n);
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.console_redrive(text, uuid[]) IS 'once.redrive, recorded in once.console_actions';

CREATE FUNCTION once.console_discard(actor text, ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
BEGIN
    PERFORM once._console_check_actor(actor);
    n := once.discard(ids);
    INSERT INTO once.console_actions (actor, db_role, action, ids, affected)
    VALUES (actor, session_user, 'discard', ids::text[], n);
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.console_discard(text, uuid[]) IS 'once.discard, recorded in once.console_actions';

CREATE FUNCTION once.console_saga_retry(actor text, name text, saga_id text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st text;
BEGIN
    PERFORM once._console_check_actor(actor);
    IF name IS NULL THEN
        RAISE EXCEPTION 'the saga''s definition (name) must not be NULL'
            USING ERRCODE = '22023', HINT = 'A saga is (name, saga_id): pass both.';
    END IF;
    st := once.saga_retry(saga_id, name);
    INSERT INTO once.console_actions (actor, db_role, action, ids, affected, result)
    VALUES (actor, session_user, 'saga_retry', ARRAY[name, saga_id], 1, st);
    RETURN st;
END
$$;
COMMENT ON FUNCTION once.console_saga_retry(text, text, text) IS 'once.saga_retry, recorded in once.console_actions';

CREATE FUNCTION once.console_saga_abort(actor text, name text, saga_id text, reason text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st text;
BEGIN
    PERFORM once._console_check_actor(actor);
    IF name IS NULL THEN
        RAISE EXCEPTION 'the saga''s definition (name) must not be NULL'
            USING ERRCODE = '22023', HINT = 'A saga is (name, saga_id): pass both.';
    END IF;
    st := once.saga_abort(saga_id, reason, name);
    INSERT INTO once.console_actions (actor, db_role, action, ids, affected, result)
    VALUES (actor, session_user, 'saga_abort', ARRAY[name, saga_id], 1, st || ': ' || coalesce(reason, 'by hand'));
    RETURN st;
END
$$;
COMMENT ON FUNCTION once.console_saga_abort(text, text, text, text) IS 'once.saga_abort, recorded in once.console_actions';

CREATE FUNCTION once.console_inbox_retry(actor text, source text, message_id text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    done boolean;
BEGIN
    PERFORM once._console_check_actor(actor);
    done := once.inbox_retry(source, message_id);
    INSERT INTO once.console_actions (actor, db_role, action, ids, affected)
    VALUES (actor, session_user, 'inbox_retry', ARRAY[source, message_id], CASE WHEN done THEN 1 ELSE 0 END);
    RETURN done;
END
$$;
COMMENT ON FUNCTION once.console_inbox_retry(text, text, text) IS 'once.inbox_retry, recorded in once.console_actions';

-- once.key_release of the row of one owner (its oid, once.keys.owner; 0: a key stored by 0.1),
-- whoever that is: the same lock on (scope, key, owner) and the same delete of an in-progress
-- row (extension/src/pg/idempotency/idempotency.cpp). key_release itself picks the caller's row, which
-- the console's admin does not have, and refuses (ON106) when several roles stored the key.
CREATE FUNCTION once._key_release_owned(scope text, key text, owner oid) RETURNS boolean
    AS 'MODULE_PATHNAME', 'once_key_release_owned' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once._key_release_owned(text, text, oid) FROM PUBLIC;

-- Releases a stuck key, the row of the given owner (runs as the extension's owner), so that
-- owner's next call runs the command again; the others' rows of (scope, key) stay.
CREATE FUNCTION once.console_key_release(actor text, scope text, key text, owner oid) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    done boolean;
BEGIN
    PERFORM once._console_check_actor(actor);
    done := once._key_release_owned(scope, key, owner);
    INSERT INTO once.console_actions (actor, db_role, action, ids, affected)
    VALUES (actor, session_user, 'key_release',
            ARRAY[scope, key, coalesce((SELECT r.rolname::text FROM pg_catalog.pg_roles r WHERE r.oid = owner),
                                       owner::text)],
            CASE WHEN done THEN 1 ELSE 0 END);
    RETURN done;
END
$$;
COMMENT ON FUNCTION once.console_key_release(text, text, text, oid) IS
    'once.key_release of one owner''s row of (scope, key), recorded in once.console_actions';

REVOKE ALL ON FUNCTION once.console_topics(),
    once.console_dead_letters(text, text, text, timestamptz, uuid, integer),
    once.console_message(uuid), once.console_blocked_keys(integer),
    once.console_sagas(text, text, timestamptz, text, integer), once.console_saga_counts(),
    once.console_saga_definitions(), once.console_relays(),
    once.console_saga(text, text), once.console_saga_history(text, text, integer),
    once.console_recent_actions(bigint, integer),
    once.console_inbox_poison(text, text, integer), once.console_key(text, text),
    once.console_redrive(text, uuid[]), once.console_discard(text, uuid[]),
    once.console_saga_retry(text, text, text), once.console_saga_abort(text, text, text, text),
    once.console_inbox_retry(text, text, text), once.console_key_release(text, text, text, oid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.console_topics(),
    once.console_dead_letters(text, text, text, timestamptz, uuid, integer),
    once.console_message(uuid), once.console_blocked_keys(integer),
    once.console_sagas(text, text, timestamptz, text, integer), once.console_saga_counts(),
    once.console_saga_definitions(), once.console_relays(),
    once.console_saga(text, text), once.console_saga_history(text, text, integer),
    once.console_recent_actions(bigint, integer),
    once.console_inbox_poison(text, text, integer), once.console_key(text, text) TO once_console_viewer, once_admin;
GRANT EXECUTE ON FUNCTION once.console_redrive(text, uuid[]), once.console_discard(text, uuid[]),
    once.console_saga_retry(text, text, text), once.console_saga_abort(text, text, text, text),
    once.console_inbox_retry(text, text, text), once.console_key_release(text, text, text, oid)
    TO once_console_admin, once_admin;

-- Inbox subscriptions with whether their handler still exists: a dropped handler's
-- subscriptions are removed by an event trigger (30_inbox.sql), but a drop while event
-- triggers do not fire leaves one behind, and the console marks it.
CREATE FUNCTION once.console_subscriptions()
RETURNS TABLE (topic_pattern text, handler text, handler_exists boolean, subscribed_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.topic_pattern,
           CASE WHEN p.oid IS NULL THEN 'function oid ' || s.handler::oid::text ELSE s.handler::text END,
           p.oid IS NOT NULL, s.subscribed_at
      FROM once.inbox_subscriptions s
      LEFT JOIN pg_catalog.pg_proc p ON p.oid = s.handler::oid
     ORDER BY p.oid IS NOT NULL, s.subscribed_at
     LIMIT 500
$$;
COMMENT ON FUNCTION once.console_subscriptions() IS 'once-console: inbox subscriptions (at most 500), those whose handler is gone first';
REVOKE ALL ON FUNCTION once.console_subscriptions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.console_subscriptions() TO once_console_viewer, once_admin;

-- Sagas page: counts per definition and status, search by a business key, and the
-- overview's send / ack rates.
--
-- A business key is a value in the saga's input that names the business object, such as
-- {"order_id": 1001}; the search takes key=value and finds sagas whose input has it at the top
-- level (as a string, or as a number or boolean when the value reads as one) through a GIN
-- index on input (jsonb_path_ops: an insert per saga start; input never changes afterwards,
-- so a saga's updates stay as they were).
CREATE INDEX saga_instances_input ON once.saga_instances USING gin (input jsonb_path_ops);
-- Counts per definition and status.
CREATE INDEX saga_instances_name_status ON once.saga_instances (name, status);

CREATE FUNCTION once.console_saga_search(q text, max_rows integer DEFAULT 50)
RETURNS TABLE (saga_id text, name text, version integer, status text, step text, attempts integer,
               last_error text, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    eq integer := strpos(q, '=');
    k text;
    v text;
    as_text jsonb;
    as_value jsonb;
BEGIN
    IF eq < 2 THEN
        RETURN QUERY
        SELECT s.saga_id, s.name, s.version, s.status, s.step, s.attempts, left(s.last_error, 300),
               s.created_at, s.updated_at
          FROM once.saga_instances s WHERE s.saga_id = q;
        RETURN;
    END IF;
    k := btrim(left(q, eq - 1));
    v := btrim(substr(q, eq + 1));
    as_text := jsonb_build_object(k, v);
    as_value := CASE WHEN v ~ '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$' OR v IN ('true', 'false')
                     THEN jsonb_build_object(k, v::jsonb) ELSE as_text END;
    RETURN QUERY
    SELECT s.saga_id, s.name, s.version, s.status, s.step, s.attempts, left(s.last_error, 300),
           s.created_at, s.updated_at
      FROM once.saga_instances s
     WHERE s.input @> as_text OR s.input @> as_value
     ORDER BY s.created_at DESC, s.saga_id DESC
     LIMIT least(greatest(max_rows, 1), 500);
END
$$;
COMMENT ON FUNCTION once.console_saga_search(text, integer) IS
    'once-console: sagas by saga id, or by key=value of their input (a business key such as order_id=1001), newest first';

CREATE FUNCTION once.console_saga_definition_counts()
RETURNS TABLE (name text, status text, n bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT d.name, st.status,
           (SELECT count(*) FROM (SELECT 1 FROM once.saga_instances s
                                   WHERE s.name = d.name AND s.status = st.status LIMIT 1000) x)
      FROM (SELECT DISTINCT sd.name FROM once.saga_definitions sd ORDER BY 1 LIMIT 100) d
     CROSS JOIN unnest(ARRAY['running', 'compensating', 'failed', 'completed', 'compensated']) AS st(status)
     ORDER BY d.name
$$;
COMMENT ON FUNCTION once.console_saga_definition_counts() IS
    'once-console: sagas per definition (at most 100) and status, each counted up to 1000';

-- Rows written to and removed from once.outbox since the statistics were reset
-- (pg_stat_all_tables): the console samples them to draw send and ack rates. A send inserts a
-- row and an ack deletes one; a relay in the locked mode also deletes and re-inserts each
-- message it gives back (nack, dead), and a discard deletes.
CREATE FUNCTION once.console_outbox_counters(OUT at timestamptz, OUT inserted bigint, OUT deleted bigint)
RETURNS record
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT clock_timestamp(), s.n_tup_ins, s.n_tup_del
      FROM pg_catalog.pg_stat_all_tables s WHERE s.relid = 'once.outbox'::regclass
$$;
COMMENT ON FUNCTION once.console_outbox_counters() IS 'once-console: rows inserted into and deleted from once.outbox (statistics)';

REVOKE ALL ON FUNCTION once.console_saga_search(text, integer), once.console_saga_definition_counts(),
    once.console_outbox_counters() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.console_saga_search(text, integer), once.console_saga_definition_counts(),
    once.console_outbox_counters() TO once_console_viewer, once_admin;

-- On-call pages: the WAL transport's slots, the messages that are retrying, a message looked
-- up wherever it is, and redrive / discard of every dead letter a filter matches.

-- The logical replication slots of this database (the WAL transport's relays stream one each;
-- a subscription's slot shows too, pg_once cannot tell them apart): whether a walsender
-- streams it, the WAL it retains (from restart_lsn) and has not confirmed (from
-- confirmed_flush_lsn), both up to the server's current position, and the lag PostgreSQL
-- measured from the streaming relay's replies; and how much more WAL may be written before
-- max_slot_wal_keep_size invalidates the slot (safe_bytes; NULL when unbounded), which the
-- console's /metrics exports for the slot-lag alert. Runs as the extension's owner, like
-- console_relays: pg_stat_replication hides other roles' walsenders' figures.
CREATE FUNCTION once.console_wal_slots()
RETURNS TABLE (slot_name name, plugin name, active boolean, walsender_pid integer, wal_status text,
               confirmed_flush_lsn pg_lsn, retained_bytes bigint, unconfirmed_bytes bigint,
               lag_seconds double precision, client text, last_reply timestamptz, safe_bytes bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.slot_name, s.plugin, s.active, s.active_pid, s.wal_status, s.confirmed_flush_lsn,
           (w.lsn - s.restart_lsn)::bigint, (w.lsn - s.confirmed_flush_lsn)::bigint,
           extract(epoch FROM COALESCE(r.replay_lag, r.flush_lag, r.write_lag))::double precision,
           CASE WHEN r.pid IS NOT NULL THEN COALESCE(host(r.client_addr), 'local') END,
           r.reply_time, s.safe_wal_size
      FROM pg_catalog.pg_replication_slots s
     CROSS JOIN (SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
                             ELSE pg_current_wal_lsn() END AS lsn) w
      LEFT JOIN pg_catalog.pg_stat_replication r ON r.pid = s.active_pid
     WHERE s.slot_type = 'logical' AND s.database = current_database()
     ORDER BY s.slot_name
     LIMIT 100
$$;
COMMENT ON FUNCTION once.console_wal_slots() IS
    'once-console: this database''s logical replication slots: streamed or not, WAL retained and not confirmed, lag';

-- Messages waiting for another attempt after a failed one (nacked, or written back by the WAL
-- transport's relay), and those a relay holds again for a retry, in the order they come due:
-- the outbox_pos index between the dead (nil) and the waiting-behind-their-key (all ones)
-- positions. A page after after_pos; a topic filters.
CREATE FUNCTION once.console_retrying(p_topic text DEFAULT NULL, after_pos uuid DEFAULT NULL, max_rows integer DEFAULT 50)
RETURNS TABLE (id uuid, topic text, key text, attempt integer, last_error text, next_try timestamptz,
               in_flight boolean, relay text, created_at timestamptz, pos uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT o.id, o.topic, o.key, o.attempt, left(o.last_error, 300), o.visible_at,
           o.relay IS NOT NULL AND o.visible_at > now(), o.relay, o.created_at, o.pos
      FROM once.outbox o
     WHERE o.pos > COALESCE(after_pos, '00000000-0000-0000-0000-000000000000'::uuid)
       AND o.pos < 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid
       AND o.dead_at IS NULL AND o.attempt > 0 AND o.last_error IS NOT NULL
       AND (p_topic IS NULL OR o.topic = p_topic)
     ORDER BY o.pos
     LIMIT least(greatest(max_rows, 1), 500)
$$;
COMMENT ON FUNCTION once.console_retrying(text, uuid, integer) IS
    'once-console: a page of messages retrying after a failed attempt, in the order they come due';

-- A message id wherever pg_once has it: the outbox (its state), the delivered history
-- (topics with a retention), the inbox (processed or poison, per source) and the inbox's
-- failures. Nothing: acked without history, or never sent. The inbox's sources are found by
-- skipping through its primary key (at most 1000), so the lookup reads a few index pages per
-- source, not the table.
CREATE FUNCTION once.console_find_message(p_id text)
RETURNS TABLE (place text, state text, source text, topic text, key text, attempt integer,
               last_error text, at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    u uuid;
BEGIN
    IF p_id IS NULL OR length(p_id) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'the message id must be 1..500 characters'
            USING ERRCODE = '22023', HINT = 'Pass an outbox message id (a uuid) or an inbox message id.';
    END IF;
    IF p_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        u := p_id::uuid;
        RETURN QUERY
        SELECT 'outbox'::text,
               CASE WHEN o.dead_at IS NOT NULL THEN 'dead'
                    WHEN o.relay IS NOT NULL AND o.visible_at > now() THEN 'claimed'
                    WHEN o.stream_fence IS NOT NULL THEN 'fenced'
                    WHEN o.pos = 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid THEN 'waiting behind its key'
                    WHEN o.attempt > 0 AND o.last_error IS NOT NULL THEN 'retrying'
                    WHEN o.visible_at > now() THEN 'delayed'
                    ELSE 'ready' END,
               NULL::text, o.topic, o.key, o.attempt, left(o.last_error, 300),
               CASE WHEN o.dead_at IS NOT NULL THEN o.dead_at ELSE o.visible_at END
          FROM once.outbox o WHERE o.id = u;
        RETURN QUERY
        SELECT 'delivered'::text, 'delivered'::text, NULL::text, d.topic, d.key, d.attempt, NULL::text, d.delivered_at
          FROM once.outbox_delivered d WHERE d.id = u
         LIMIT 1;
    END IF;
    RETURN QUERY
    WITH RECURSIVE src(source, depth) AS (
        (SELECT i.source, 1 FROM once.inbox i ORDER BY i.source LIMIT 1)
        UNION ALL
        SELECT (SELECT i.source FROM once.inbox i WHERE i.source > src.source ORDER BY i.source LIMIT 1), src.depth + 1
          FROM src WHERE src.source IS NOT NULL AND src.depth < 1000
    )
    SELECT 'inbox'::text, CASE WHEN i.poison THEN 'poison' ELSE 'processed' END, i.source, i.topic,
           NULL::text, NULL::integer, NULL::text, i.received_at
      FROM src JOIN once.inbox i ON i.source = src.source AND i.message_id = p_id;
    RETURN QUERY
    WITH RECURSIVE src(source, depth) AS (
        (SELECT f.source, 1 FROM once.inbox_failures f ORDER BY f.source LIMIT 1)
        UNION ALL
        SELECT (SELECT f.source FROM once.inbox_failures f WHERE f.source > src.source ORDER BY f.source LIMIT 1), src.depth + 1
          FROM src WHERE src.source IS NOT NULL AND src.depth < 1000
    )
    SELECT 'inbox failures'::text, 'failed ' || f.attempts || CASE WHEN f.attempts = 1 THEN ' time' ELSE ' times' END,
           f.source, NULL::text, NULL::text, f.attempts, left(f.last_error, 300), f.last_failed_at
      FROM src JOIN once.inbox_failures f ON f.source = src.source AND f.message_id = p_id;
END
$$;
COMMENT ON FUNCTION once.console_find_message(text) IS
    'once-console: where a message id is: outbox (with its state), delivered history, inbox, inbox failures';

-- Dead letters a filter matches (each part optional: topic, key prefix, error text, dead
-- before), for redrive or discard of all of them: how many (counted up to 10001, one more than
-- an action may take) and the newest one's dead_at, the bound the action is given so that a
-- message that dies after the confirmation is not touched.
CREATE FUNCTION once._console_dead_matching(p_topic text, p_key_prefix text, p_error text,
                                            p_dead_before timestamptz, p_bound timestamptz)
RETURNS TABLE (id uuid, dead_at timestamptz)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT o.id, o.dead_at FROM once.outbox o
     WHERE o.dead_at IS NOT NULL
       AND o.dead_at <= COALESCE(p_bound, 'infinity')
       AND (p_dead_before IS NULL OR o.dead_at < p_dead_before)
       AND (p_topic IS NULL OR o.topic = p_topic)
       AND (p_key_prefix IS NULL OR starts_with(o.key, p_key_prefix))
       AND (p_error IS NULL OR strpos(lower(o.last_error), lower(p_error)) > 0)
     ORDER BY o.dead_at, o.id
     LIMIT 10001
$$;
REVOKE ALL ON FUNCTION once._console_dead_matching(text, text, text, timestamptz, timestamptz) FROM PUBLIC;

CREATE FUNCTION once.console_dead_letters_matching(p_topic text, p_key_prefix text, p_error text,
                                                   p_dead_before timestamptz,
                                                   OUT matching integer, OUT newest_dead_at timestamptz)
RETURNS record
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*)::integer, max(m.dead_at)
      FROM once._console_dead_matching(p_topic, p_key_prefix, p_error, p_dead_before, NULL) m
$$;
COMMENT ON FUNCTION once.console_dead_letters_matching(text, text, text, timestamptz) IS
    'once-console: how many dead letters a filter matches (up to 10001) and the newest one''s dead_at';

-- Redrive (op 'redrive') or discard (op 'discard') every dead letter the filter matches that
-- died at or before p_bound (console_dead_letters_matching's newest_dead_at): once.redrive /
-- once.discard of their ids, recorded in once.console_actions; returns how many it changed.
-- More than 10000 is refused (ON211, as once.redrive refuses more ids): narrow the filter.
CREATE FUNCTION once.console_dead_letters_act(actor text, op text, p_topic text, p_key_prefix text,
                                              p_error text, p_dead_before timestamptz, p_bound timestamptz)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ids uuid[];
    n integer := 0;
BEGIN
    PERFORM once._console_check_actor(actor);
    IF op IS NULL OR op NOT IN ('redrive', 'discard') THEN
        RAISE EXCEPTION 'op must be redrive or discard' USING ERRCODE = '22023';
    END IF;
    IF p_bound IS NULL THEN
        RAISE EXCEPTION 'the bound (the newest dead_at the confirmation counted) must not be NULL'
            USING ERRCODE = '22023', HINT = 'Pass newest_dead_at of once.console_dead_letters_matching.';
    END IF;
    ids := ARRAY(SELECT m.id FROM once._console_dead_matching(p_topic, p_key_prefix, p_error, p_dead_before, p_bound) m);
    IF cardinality(ids) > 10000 THEN
        RAISE EXCEPTION 'more than 10000 dead letters match'
            USING ERRCODE = 'ON211', HINT = 'Narrow the filter (a topic, a key prefix, an earlier "dead before").';
    END IF;
    IF cardinality(ids) > 0 THEN
        n := CASE op WHEN 'redrive' THEN once.redrive(ids) ELSE once.discard(ids) END;
    END IF;
    INSERT INTO once.console_actions (actor, db_role, action, ids, affected, result)
    VALUES (actor, session_user, op || '_matching',
            ARRAY['topic=' || COALESCE(p_topic, '*'), 'key_prefix=' || COALESCE(p_key_prefix, '*'),
                  'error=' || COALESCE(p_error, '*'), 'dead_before=' || COALESCE(p_dead_before::text, '*'),
                  'dead_at<=' || p_bound::text],
            n, cardinality(ids) || ' matched');
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.console_dead_letters_act(text, text, text, text, text, timestamptz, timestamptz) IS
    'once.redrive / once.discard of the dead letters a filter matches up to a bound, recorded in once.console_actions';

REVOKE ALL ON FUNCTION once.console_wal_slots(), once.console_retrying(text, uuid, integer),
    once.console_find_message(text), once.console_dead_letters_matching(text, text, text, timestamptz),
    once.console_dead_letters_act(text, text, text, text, text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.console_wal_slots(), once.console_retrying(text, uuid, integer),
    once.console_find_message(text), once.console_dead_letters_matching(text, text, text, timestamptz)
    TO once_console_viewer, once_admin;
GRANT EXECUTE ON FUNCTION once.console_dead_letters_act(text, text, text, text, text, timestamptz, timestamptz)
    TO once_console_admin, once_admin;
