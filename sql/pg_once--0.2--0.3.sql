-- pg_once 0.2 -> 0.3. Written by hand: every change made in sql/src since 0.2 was released,
-- as a diff: each object is created (or replaced) once, in an order its dependencies allow.
-- The upgrade test (tests/upgrade/run.sh) checks that a database updated with this script has
-- exactly the catalog of a fresh 0.3 install, that data written by 0.1 and 0.2 keeps working,
-- and that no object is created twice (tests/upgrade/created_once.py).

\echo Use "ALTER EXTENSION pg_once UPDATE TO '0.3'" to load this file. \quit

-- ---------------------------------------------------------------------------------------
-- Idempotency keys stored by 0.1 have no owner and were shared by every producer until they
-- expired, with a ttl that had no upper bound. From 0.3 that window
-- ends at most 24 hours (the default ttl) after the update; the first role to complete or
-- take over such a key becomes its owner (the library does that).
UPDATE once.keys
   SET expires_at = pg_catalog.now() OPERATOR(pg_catalog.+) interval '24 hours'
 WHERE owner IS NULL
   AND expires_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '24 hours');

-- ---------------------------------------------------------------------------------------
-- Per-key order is per sending role: a message's key orders it among
-- the messages its own role sent with that key, so another role's message of the same key
-- (a deliver_at years ahead, a topic no relay serves) no longer holds it back. The sender of a
-- message already in the outbox is unknown: those keep owner 0, and a claim still takes a
-- role's message only after every earlier owner-0 message of its key (docs/outbox.md).
-- (Added here, first: the views and functions below read it.)
ALTER TABLE once.outbox ADD COLUMN key_owner oid;
UPDATE once.outbox SET key_owner = 0 WHERE key IS NOT NULL;

DROP FUNCTION once._outbox_keys_released(text[]);
-- Internal: once.discard / once.cancel removed messages of these keys, sent by these roles
-- (key_owner; their next messages are promoted at commit).
CREATE FUNCTION once._outbox_keys_released(keys text[], owners oid[]) RETURNS void
AS 'MODULE_PATHNAME', 'once_outbox_keys_released' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once._outbox_keys_released(text[], oid[]) FROM PUBLIC;
CREATE OR REPLACE FUNCTION once.discard(ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    released text[];
    owners oid[];
BEGIN
    PERFORM once._check_dead_letter_ids(ids);
    WITH d AS (DELETE FROM once.outbox WHERE id = ANY (ids) AND dead_at IS NOT NULL RETURNING key, key_owner)
    SELECT pg_catalog.count(*), pg_catalog.array_agg(d.key) FILTER (WHERE d.key IS NOT NULL),
           pg_catalog.array_agg(d.key_owner) FILTER (WHERE d.key IS NOT NULL)
      INTO n, released, owners FROM d;
    -- a discarded head releases its key: the next message is promoted at commit
    PERFORM once._outbox_keys_released(released, owners);
    RETURN n;
END
$$;

-- ---------------------------------------------------------------------------------------
-- Sagas are visible to the role that started them: once_producer could
-- read every saga's data, step outputs included.
ALTER TABLE once.saga_instances ADD COLUMN started_by oid;

-- A saga's data holds step outputs (payment tokens, addresses): a role sees the sagas that
-- it, or a role whose privileges it has, started; once_admin sees all.
-- Sagas started before 0.3 have no starter and are shown to once_admin only. The views
-- (once.sagas, once.saga_history) are defined below, with the failure cause and the saga's
-- name.

-- ---------------------------------------------------------------------------------------
-- The relays' maintenance lock in pg_once's own lock space: 0.2's
-- relays used pg_try_advisory_lock, which any role could take first.
CREATE FUNCTION once.relay_maintenance_lock() RETURNS boolean
AS 'MODULE_PATHNAME', 'once_relay_maintenance_lock' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.relay_maintenance_lock() IS
    'Take the relays'' maintenance lock for this session if it is free; true when this session holds it';
REVOKE ALL ON FUNCTION once.relay_maintenance_lock() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.relay_maintenance_lock() TO once_relay, once_admin;

-- ---------------------------------------------------------------------------------------
-- Publishing grants per topic pattern: sql/src/25_publish_grants.sql.
CREATE TABLE once.publish_grants (
    grantee       oid         NOT NULL,   -- a role (regrole): it and its members may publish
    topic_pattern text        NOT NULL,   -- validated by once.grant_publish (core/topic.hpp)
    granted_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    granted_by    oid         NOT NULL,
    PRIMARY KEY (grantee, topic_pattern)
);
COMMENT ON TABLE once.publish_grants IS 'Topic patterns each role may publish on; empty: every producer publishes everywhere';
REVOKE ALL ON TABLE once.publish_grants FROM PUBLIC;
GRANT SELECT ON TABLE once.publish_grants TO once_admin;

-- Every backend caches the grants (a send pays one flag check); a change drops the copies.
CREATE FUNCTION once._publish_grants_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'once_publish_grants_changed' LANGUAGE C;
REVOKE ALL ON FUNCTION once._publish_grants_changed() FROM PUBLIC;
CREATE TRIGGER publish_grants_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON once.publish_grants
    FOR EACH STATEMENT EXECUTE FUNCTION once._publish_grants_changed();

CREATE FUNCTION once.grant_publish(role regrole, topic_pattern text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'once_grant_publish' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.grant_publish(regrole, text) IS
    'Let role (and its members) publish on topics matching the pattern; false if already granted';

CREATE FUNCTION once.revoke_publish(role regrole, topic_pattern text DEFAULT NULL) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM once.publish_grants
         WHERE grantee = $1::oid AND ($2 IS NULL OR topic_pattern = $2)
        RETURNING 1)
    SELECT count(*)::integer FROM gone
$$;
COMMENT ON FUNCTION once.revoke_publish(regrole, text) IS
    'Remove the role''s publishing grant on the pattern (every pattern when NULL); returns how many';

REVOKE ALL ON FUNCTION once.grant_publish(regrole, text), once.revoke_publish(regrole, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.grant_publish(regrole, text), once.revoke_publish(regrole, text) TO once_admin;

-- ---------------------------------------------------------------------------------------
-- once-console: its roles, the audit table of its actions, the indexes its pages
-- page through and its read/action functions (sql/src/60_console.sql, verbatim below).
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

-- Internal: the two claim positions with a meaning of their own (the library's names for them:
-- core/outbox_policy.hpp). A keyed message waiting behind its key's head sits at the greatest
-- position, after every range a claim walks; a dead letter at the least. IMMUTABLE, so the
-- planner folds a call into a constant and index conditions stay index conditions.
CREATE FUNCTION once._waiting_position() RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid $$;
CREATE FUNCTION once._dead_position() RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT '00000000-0000-0000-0000-000000000000'::uuid $$;
REVOKE ALL ON FUNCTION once._waiting_position(), once._dead_position() FROM PUBLIC;

-- Internal: per topic (at most max_topics, found by skipping through the topic index): the
-- first `cap` pending messages in claim order split into ready / delayed / in flight, then
-- blocked (waiting behind their key's head) and dead, each counted up to `cap`; capped = a
-- count reached it. The console's overview and the relay's gauges read it. The limits are
-- written into the statement (EXECUTE), not passed as parameters: with LIMIT $1 the planner
-- assumes a large share of the table and may choose a bitmap scan and sort of a whole topic.
-- jit is off: the planner's estimate for the bounded scans (about 1.9M with a 1M-message
-- topic) is above jit_above_cost, and compiling took about 1 s of a read whose execution
-- takes milliseconds.
CREATE FUNCTION once._topic_counts(max_topics integer, cap integer)
RETURNS TABLE (topic text, ready bigint, delayed bigint, in_flight bigint, blocked bigint, dead bigint,
               oldest_ready timestamptz, capped boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET jit = off
AS $f$
BEGIN
    RETURN QUERY EXECUTE format($q$
    WITH RECURSIVE t(topic) AS (
        (SELECT o.topic FROM once.outbox o ORDER BY o.topic LIMIT 1)
        UNION ALL
        SELECT (SELECT o.topic FROM once.outbox o WHERE o.topic > t.topic ORDER BY o.topic LIMIT 1)
          FROM t WHERE t.topic IS NOT NULL
    )
    SELECT t.topic, p.ready, p.delayed, p.in_flight, b.n, d.n, p.oldest_ready,
           (p.total >= %2$s OR b.n >= %2$s OR d.n >= %2$s)
      FROM (SELECT t.topic FROM t WHERE t.topic IS NOT NULL LIMIT %1$s) t
     CROSS JOIN LATERAL (
            SELECT count(*) FILTER (WHERE s.visible_at <= now()) AS ready,
                   count(*) FILTER (WHERE s.visible_at > now() AND s.relay IS NULL) AS delayed,
                   count(*) FILTER (WHERE s.visible_at > now() AND s.relay IS NOT NULL) AS in_flight,
                   count(*) AS total,
                   min(s.created_at) FILTER (WHERE s.visible_at <= now()) AS oldest_ready
              FROM (SELECT o.visible_at, o.relay, o.created_at FROM once.outbox o
                     WHERE o.topic = t.topic
                       AND COALESCE(o.pos, o.id) > once._dead_position()
                       AND COALESCE(o.pos, o.id) < once._waiting_position()
                     ORDER BY COALESCE(o.pos, o.id) LIMIT %2$s) s) p
     CROSS JOIN LATERAL (
            SELECT count(*) AS n FROM (SELECT 1 FROM once.outbox o
                     WHERE o.topic = t.topic
                       AND COALESCE(o.pos, o.id) = once._waiting_position() LIMIT %2$s) x) b
     CROSS JOIN LATERAL (
            SELECT count(*) AS n FROM (SELECT 1 FROM once.outbox o
                     WHERE o.topic = t.topic
                       AND COALESCE(o.pos, o.id) = once._dead_position() LIMIT %2$s) x) d
     ORDER BY t.topic
    $q$, max_topics, cap);
END
$f$;
REVOKE ALL ON FUNCTION once._topic_counts(integer, integer) FROM PUBLIC;

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

REVOKE ALL ON FUNCTION once.console_topics(),
    once.console_dead_letters(text, text, text, timestamptz, uuid, integer),
    once.console_message(uuid), once.console_blocked_keys(integer),
    once.console_sagas(text, text, timestamptz, text, integer), once.console_saga_counts(),
    once.console_saga_definitions(), once.console_relays(),
    once.console_recent_actions(bigint, integer),
    once.console_inbox_poison(text, text, integer),
    once.console_redrive(text, uuid[]), once.console_discard(text, uuid[]),
    once.console_inbox_retry(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.console_topics(),
    once.console_dead_letters(text, text, text, timestamptz, uuid, integer),
    once.console_message(uuid), once.console_blocked_keys(integer),
    once.console_sagas(text, text, timestamptz, text, integer), once.console_saga_counts(),
    once.console_saga_definitions(), once.console_relays(),
    once.console_recent_actions(bigint, integer),
    once.console_inbox_poison(text, text, integer) TO once_console_viewer, once_admin;
GRANT EXECUTE ON FUNCTION once.console_redrive(text, uuid[]), once.console_discard(text, uuid[]),
    once.console_inbox_retry(text, text, text)
    TO once_console_admin, once_admin;

-- ---------------------------------------------------------------------------------------
-- Inbox handlers and saga local steps run as the role the admin chose for them (run_as) or as
-- their owner, never with the rights of the role that calls once.deliver / once.saga_tick:
-- 0.2 ran them as that caller, so a function's owner could rewrite
-- the body after the admin set it up and borrow a relay's or consumer's rights. Existing
-- subscriptions and definitions get run_as NULL: their functions run as their owners.
ALTER TABLE once.inbox_subscriptions ADD COLUMN run_as regrole;
ALTER TABLE once.saga_definitions ADD COLUMN run_as regrole;

DROP FUNCTION once.subscribe(text, regprocedure);
CREATE FUNCTION once.subscribe(topic_pattern text, handler regprocedure, run_as regrole DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'once_subscribe' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.subscribe(text, regprocedure, regrole) IS
    'Run handler(msg once.inbound), as run_as (NULL: its owner), for every delivered message whose topic matches the pattern; false if already subscribed so';

REVOKE ALL ON FUNCTION once.subscribe(text, regprocedure, regrole) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.subscribe(text, regprocedure, regrole) TO once_admin;

-- The role a local step function runs as (extension/src/pg/common/run_as.hpp): run_as, or the
-- function's owner; ON306 when the owner could rewrite the function to act as run_as.
CREATE FUNCTION once._function_run_as(fn regprocedure, run_as regrole, what text) RETURNS regrole
    AS 'MODULE_PATHNAME', 'once_function_run_as' LANGUAGE C VOLATILE;

REVOKE ALL ON FUNCTION once._function_run_as(regprocedure, regrole, text) FROM PUBLIC;

-- Internal: once.saga_define of one name at a time (pg_once's own lock: SQL's advisory lock
-- functions cannot take it first).
CREATE FUNCTION once._saga_define_lock(name text) RETURNS void
AS 'MODULE_PATHNAME', 'once_saga_define_lock' LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION once._saga_define_lock(text) FROM PUBLIC;

DROP FUNCTION once.saga_define(text, jsonb);
CREATE FUNCTION once.saga_define(name text, definition jsonb, run_as regrole DEFAULT NULL) RETURNS integer
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
            -- ON306 when its owner could rewrite it to act as run_as (checked again at each run)
            PERFORM once._function_run_as(to_regprocedure(fn || '(text, jsonb)'), saga_define.run_as,
                                          'saga step function');
        END LOOP;
    END LOOP;
    PERFORM once._saga_define_lock(name);
    SELECT d.version, d.definition, d.run_as INTO latest
      FROM once.saga_definitions d WHERE d.name = saga_define.name ORDER BY d.version DESC LIMIT 1;
    IF FOUND AND latest.definition = normalized
       AND coalesce(latest.run_as = saga_define.run_as, latest.run_as IS NULL AND saga_define.run_as IS NULL) THEN
        RETURN latest.version;   -- defining the same thing again is a no-op
    END IF;
    INSERT INTO once.saga_definitions (name, version, definition, source, run_as)
    VALUES (saga_define.name, coalesce(latest.version, 0) + 1, normalized, definition, saga_define.run_as);
    RETURN coalesce(latest.version, 0) + 1;
END
$$;
COMMENT ON FUNCTION once.saga_define(text, jsonb, regrole) IS
    'Validate and store a saga definition, its local steps run as run_as (NULL: each function''s owner); returns its version (a new one only when it changed)';

REVOKE ALL ON FUNCTION once.saga_define(text, jsonb, regrole) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.saga_define(text, jsonb, regrole) TO once_admin;

DROP FUNCTION once._saga_local(text);

-- ---------------------------------------------------------------------------------------
-- A prepared transaction no longer stalls the relays: a commit that only
-- releases keys fails at once with ON216 instead of waiting for COMMIT PREPARED, claims skip
-- the keys a prepared transaction holds, and once.blocked_keys lists them (prepared_gid) and
-- the heads nobody claims. An admin can expedite or cancel any message.
-- The lock bucket of a message key, and the buckets prepared transactions hold now (with their
-- xids): a prepared transaction keeps the order lock of the keys it sent, and of the keys that
-- share their buckets, until COMMIT / ROLLBACK PREPARED (extension/src/pg/outbox/outbox_key_order.hpp).
CREATE FUNCTION once._outbox_key_bucket(key text) RETURNS integer
    AS 'MODULE_PATHNAME', 'once_outbox_key_bucket' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION once._outbox_prepared_buckets() RETURNS TABLE (bucket integer, transaction xid)
    AS 'MODULE_PATHNAME', 'once_outbox_prepared_buckets' LANGUAGE C VOLATILE ROWS 1;
REVOKE ALL ON FUNCTION once._outbox_key_bucket(text), once._outbox_prepared_buckets() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once._outbox_key_bucket(text), once._outbox_prepared_buckets() TO once_admin, once_relay;

-- Keys whose oldest message is dead: the messages behind it wait (per-key order is kept).
-- A key is blocked by its oldest message when that one is dead, or when it is delayed
-- (deliver_at in the future, never delivered) and others wait behind it: one producer's
-- delayed message holds back the later ones of its key and role, and that must show.
-- reason, held_message_id and held_until came in 0.2 (appended).
-- 0.3 adds the keys a prepared transaction holds (reason 'prepared', prepared_gid appended):
-- relays skip them until it is committed or rolled back; and heads that
-- have been due for over 5 minutes without a relay taking them (reason 'unclaimed': no relay
-- serves the topic, or the relays are far behind).
-- (The view is defined once, below, with the fenced keys of the WAL transport.)

-- Any message, not only dead letters: a message that holds back its key
-- for a long time (a deliver_at years ahead, a topic no relay serves, a long backoff) can be
-- made due now or removed by an admin. ids are checked as for redrive / discard (ON211).
CREATE FUNCTION once.expedite(ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
BEGIN
    PERFORM once._check_dead_letter_ids(ids);
    -- delayed or waiting for a retry, not leased, not dead, not waiting behind its key's head
    UPDATE once.outbox
       SET visible_at = pg_catalog.now(), pos = once._outbox_position(pg_catalog.clock_timestamp())
     WHERE id = ANY (ids) AND dead_at IS NULL AND relay IS NULL AND visible_at > pg_catalog.now()
       AND pos IS NOT NULL AND pos <> once._waiting_position();
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        NOTIFY once_outbox;
    END IF;
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.expedite(uuid[]) IS
    'Make delayed or retrying messages due now (not leased, dead or waiting behind their key); returns how many';

CREATE FUNCTION once.cancel(ids uuid[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    released text[];
    owners oid[];
BEGIN
    PERFORM once._check_dead_letter_ids(ids);
    WITH d AS (DELETE FROM once.outbox WHERE id = ANY (ids) RETURNING key, key_owner)
    SELECT pg_catalog.count(*), pg_catalog.array_agg(d.key) FILTER (WHERE d.key IS NOT NULL),
           pg_catalog.array_agg(d.key_owner) FILTER (WHERE d.key IS NOT NULL)
      INTO n, released, owners FROM d;
    -- a cancelled head releases its key: the next message is promoted at commit
    PERFORM once._outbox_keys_released(released, owners);
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.cancel(uuid[]) IS
    'Delete messages for good, whatever their state (one leased to a relay may still be delivered); releases their keys; returns how many';
REVOKE ALL ON FUNCTION once.expedite(uuid[]), once.cancel(uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.expedite(uuid[]), once.cancel(uuid[]) TO once_admin;


-- ---------------------------------------------------------------------------------------
-- Trace context: a saga keeps the W3C traceparent it was started under
-- (SET LOCAL once.traceparent), and each of its step commands carries a child of it.
ALTER TABLE once.saga_instances ADD COLUMN traceparent text;

-- ---------------------------------------------------------------------------------------
-- once-relay metrics: the per-topic and saga gauges of /metrics
-- (sql/src/70_relay_metrics.sql, verbatim below).

-- The gauges once-relay's /metrics shows (docs/relay.md, "Metrics"): per topic ready,
-- delayed, in flight, blocked and dead counts and the oldest ready message's age, and sagas
-- per status. The relay reads them every 15 s or less often, on a connection of its own.
-- Every count is bounded, so a read costs about the same with a 1M-message backlog as with
-- ten: at most 500 topics, each counted up to 10000 (once._topic_counts); capped = a count
-- reached its bound (the value is then "at least").
CREATE FUNCTION once.relay_topic_gauges()
RETURNS TABLE (topic text, ready bigint, delayed bigint, in_flight bigint, blocked bigint, dead bigint,
               oldest_ready_age double precision, capped boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.topic, c.ready, c.delayed, c.in_flight, c.blocked, c.dead,
           extract(epoch FROM now() - c.oldest_ready)::double precision, c.capped
      FROM once._topic_counts(500, 10000) c
$$;
COMMENT ON FUNCTION once.relay_topic_gauges() IS
    'once-relay /metrics: per topic ready, delayed, in flight, blocked, dead (each counted up to 10000) and the oldest ready message''s age in seconds';

-- Sagas per status, each counted up to 10000 (index-only on saga_instances_status).
CREATE FUNCTION once.relay_saga_gauges()
RETURNS TABLE (status text, sagas bigint, capped boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
    SELECT s.status, c.n, c.n >= 10000
      FROM (VALUES ('running'), ('compensating'), ('completed'), ('compensated'), ('failed')) s(status)
     CROSS JOIN LATERAL (SELECT count(*) AS n FROM (SELECT 1 FROM once.saga_instances i
                                                     WHERE i.status = s.status LIMIT 10000) x) c
$$;
COMMENT ON FUNCTION once.relay_saga_gauges() IS
    'once-relay /metrics: sagas per status, each counted up to 10000';

REVOKE ALL ON FUNCTION once.relay_topic_gauges(), once.relay_saga_gauges() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.relay_topic_gauges(), once.relay_saga_gauges() TO once_relay, once_admin;

-- ---------------------------------------------------------------------------------------
-- Relay heartbeats, read by once-console's Relays page, overview and /metrics
-- (sql/src/75_relay_heartbeats.sql, verbatim below).

-- Relay heartbeats (docs/relay.md, "Heartbeats"): every once-relay writes a row here every
-- --heartbeat-interval, so what is not running shows too: a relay that stopped, crashed or
-- lost its host leaves a row whose last_beat stops moving. once-console reads them (its
-- Relays page, the overview and its /metrics), which keeps working while no relay does.
-- One row per relay name and host; a restarted relay replaces its row. Rows not written for
-- 7 days are removed by the next heartbeat of any relay.
CREATE TABLE once.relay_heartbeats (
    relay          text             NOT NULL,   -- --name
    host           text             NOT NULL,   -- the relay's host name
    pid            integer          NOT NULL,
    transport      text             NOT NULL,   -- 'table' or 'wal'
    sink           text             NOT NULL,   -- the sink as the relay logs it (never a credential)
    state          text             NOT NULL,   -- see once.relay_heartbeat
    state_since    timestamptz      NOT NULL,
    last_beat      timestamptz      NOT NULL,
    beat_interval  interval         NOT NULL,   -- the relay's --heartbeat-interval
    messages_per_s double precision NOT NULL,   -- acknowledged per second since the previous beat
    started_at     timestamptz      NOT NULL,
    version        text             NOT NULL,   -- once-relay's version
    PRIMARY KEY (relay, host)
);
COMMENT ON TABLE once.relay_heartbeats IS
    'Each once-relay''s last heartbeat: host, pid, transport, sink, state, messages/s (written by once.relay_heartbeat)';
REVOKE ALL ON TABLE once.relay_heartbeats FROM PUBLIC;
GRANT SELECT ON TABLE once.relay_heartbeats TO once_admin;

-- A relay's heartbeat. state: 'connecting' (its loop has no database connection yet, or lost
-- it), 'relaying' (table transport, sink up), 'streaming' (WAL
-- transport, this relay streams the slot), 'standing by' (WAL transport, another relay
-- streams it), 'sink down', 'stopped' (its last beat, at a clean stop). state_since is kept
-- while the state stays the same.
CREATE FUNCTION once.relay_heartbeat(
    relay text, host text, pid integer, transport text, sink text, state text,
    messages_per_s double precision, started_at timestamptz, version text, beat_interval interval)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF relay IS NULL OR relay = '' OR length(relay) > 200 OR relay ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'relay name must be 1 to 200 characters without control characters'
            USING ERRCODE = 'ON208', DETAIL = format('relay was %L.', left(relay, 300));
    END IF;
    IF host IS NULL OR host = '' OR length(host) > 255 OR host ~ '[[:cntrl:]]'
       OR pid IS NULL OR pid <= 0
       OR transport IS NULL OR transport NOT IN ('table', 'wal')
       OR sink IS NULL OR length(sink) > 500
       OR state IS NULL OR state NOT IN ('connecting', 'relaying', 'streaming', 'standing by', 'sink down', 'stopped')
       OR messages_per_s IS NULL OR NOT (messages_per_s >= 0 AND messages_per_s < 'infinity')
       OR started_at IS NULL OR NOT isfinite(started_at)
       OR version IS NULL OR version = '' OR length(version) > 50
       OR beat_interval IS NULL OR beat_interval < interval '1 second' OR beat_interval > interval '1 hour' THEN
        RAISE EXCEPTION 'invalid relay heartbeat'
            USING ERRCODE = 'ON218',
                  DETAIL = format('host %L, pid %s, transport %L, state %L, messages_per_s %s, started_at %s, version %L, beat_interval %s.',
                                  left(host, 300), pid, left(transport, 50), left(state, 50), messages_per_s, started_at,
                                  left(version, 60), beat_interval),
                  HINT = 'transport is table or wal; state one of connecting, relaying, streaming, standing by, sink down, stopped; the interval 1 s to 1 h.';
    END IF;
    INSERT INTO once.relay_heartbeats AS h
           (relay, host, pid, transport, sink, state, state_since, last_beat, beat_interval, messages_per_s,
            started_at, version)
    VALUES (relay_heartbeat.relay, relay_heartbeat.host, relay_heartbeat.pid, relay_heartbeat.transport,
            relay_heartbeat.sink, relay_heartbeat.state, now(), now(), relay_heartbeat.beat_interval,
            relay_heartbeat.messages_per_s, relay_heartbeat.started_at, relay_heartbeat.version)
    ON CONFLICT ON CONSTRAINT relay_heartbeats_pkey DO UPDATE
       SET pid = EXCLUDED.pid, transport = EXCLUDED.transport, sink = EXCLUDED.sink, state = EXCLUDED.state,
           state_since = CASE WHEN h.state OPERATOR(pg_catalog.=) EXCLUDED.state
                               AND h.started_at OPERATOR(pg_catalog.=) EXCLUDED.started_at
                              THEN h.state_since ELSE EXCLUDED.state_since END,
           last_beat = EXCLUDED.last_beat, beat_interval = EXCLUDED.beat_interval,
           messages_per_s = EXCLUDED.messages_per_s, started_at = EXCLUDED.started_at, version = EXCLUDED.version;
    DELETE FROM once.relay_heartbeats h WHERE h.last_beat OPERATOR(pg_catalog.<) now() - interval '7 days';
END
$$;
COMMENT ON FUNCTION once.relay_heartbeat(text, text, integer, text, text, text, double precision, timestamptz, text, interval) IS
    'once-relay: its heartbeat (every --heartbeat-interval), kept in once.relay_heartbeats';
REVOKE ALL ON FUNCTION once.relay_heartbeat(text, text, integer, text, text, text, double precision, timestamptz, text, interval)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.relay_heartbeat(text, text, integer, text, text, text, double precision, timestamptz, text, interval)
    TO once_relay;

-- once-console: every relay's last heartbeat, its age, and whether it is alive: not stopped,
-- beaten within two of its intervals, and connected now (a connection named "once-relay
-- <name>" in pg_stat_activity, whose application_name every role may read): a relay killed
-- on the database's host is not alive at once, without waiting for its beat to age.
CREATE FUNCTION once.console_relay_heartbeats()
RETURNS TABLE (relay text, host text, pid integer, transport text, sink text, state text, state_since timestamptz,
               last_beat timestamptz, age_seconds double precision, beat_interval_seconds double precision,
               messages_per_s double precision, started_at timestamptz, version text, alive boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT h.relay, h.host, h.pid, h.transport, h.sink, h.state, h.state_since, h.last_beat,
           greatest(extract(epoch FROM now() - h.last_beat)::double precision, 0),
           extract(epoch FROM h.beat_interval)::double precision, h.messages_per_s, h.started_at, h.version,
           h.state <> 'stopped' AND now() - h.last_beat <= 2 * h.beat_interval
             AND EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
                          WHERE a.datname = current_database() AND a.application_name = 'once-relay ' || h.relay)
      FROM once.relay_heartbeats h
     ORDER BY h.relay, h.host
     LIMIT 500
$$;
COMMENT ON FUNCTION once.console_relay_heartbeats() IS
    'once-console: each relay''s last heartbeat, its age in seconds and whether it is alive (beaten within two intervals, connected, not stopped)';

-- once-console /metrics: per topic (at most 500), messages that failed at least once and wait
-- for their next attempt (counted up to 10000 in all), and when the oldest of them was sent.
-- Without an index on attempt this walks the outbox until it has 10000 of them: a read every
-- scrape interval.
CREATE FUNCTION once.console_retrying_counts()
RETURNS TABLE (topic text, retrying bigint, oldest_created timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.topic, count(*), min(r.created_at)
      FROM (SELECT o.topic, o.created_at FROM once.outbox o
             WHERE o.attempt > 0 AND o.dead_at IS NULL LIMIT 10000) r
     GROUP BY r.topic
     ORDER BY 1
     LIMIT 500
$$;
COMMENT ON FUNCTION once.console_retrying_counts() IS
    'once-console /metrics: per topic, messages that failed at least once and wait to be retried (up to 10000), and the oldest one''s send time';

REVOKE ALL ON FUNCTION once.console_relay_heartbeats(), once.console_retrying_counts() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.console_relay_heartbeats(), once.console_retrying_counts()
    TO once_console_viewer, once_admin;

-- =======================================================================================
-- On call: text ids for redrive/discard, blocked messages in
-- outbox_stats, a saga's failure cause, handlers dropped under their subscriptions.

-- Text ids (0.3): ARRAY['0190…'] is a text[] and an untyped '{…}' literal resolves to the text
-- overload (PostgreSQL prefers the string category for an unknown literal), so neither needs a
-- ::uuid[] cast; uuid[] arguments still call the functions above. An id that is not a uuid is
-- ON211 naming it; NULL, empty and NULL elements are left to _check_dead_letter_ids.
CREATE FUNCTION once._dead_letter_ids(ids text[]) RETURNS uuid[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text;
BEGIN
    RETURN ids::uuid[];
EXCEPTION WHEN invalid_text_representation THEN
    FOREACH id IN ARRAY ids LOOP
        BEGIN
            PERFORM id::uuid;
        EXCEPTION WHEN invalid_text_representation THEN
            RAISE EXCEPTION 'ids must be message ids (uuids): % is not one', pg_catalog.quote_literal(pg_catalog.left(id, 80))
                USING ERRCODE = 'ON211',
                      HINT = 'Pass the id column of once.dead_letters, e.g. once.redrive(ARRAY[''0190a5e2-7c4b-7d1e-8a4f-2b6c9d0e1f23'']).';
        END;
    END LOOP;
    RAISE;
END
$$;
REVOKE ALL ON FUNCTION once._dead_letter_ids(text[]) FROM PUBLIC;

-- The text argument: an array literal '{…}' or one id.
CREATE FUNCTION once._dead_letter_ids(ids text) RETURNS uuid[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT once._dead_letter_ids(CASE WHEN ids IS NULL THEN NULL
                                      WHEN btrim(ids) LIKE '{%' THEN ids::text[]
                                      ELSE ARRAY[ids] END)
$$;
REVOKE ALL ON FUNCTION once._dead_letter_ids(text) FROM PUBLIC;

CREATE FUNCTION once.redrive(ids text[]) RETURNS integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT once.redrive(once._dead_letter_ids(ids)) $$;
COMMENT ON FUNCTION once.redrive(text[]) IS 'once.redrive(uuid[]) for ids written as text, e.g. ARRAY[''0190…'']';
CREATE FUNCTION once.redrive(ids text) RETURNS integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT once.redrive(once._dead_letter_ids(ids)) $$;
COMMENT ON FUNCTION once.redrive(text) IS 'once.redrive(uuid[]) for an array literal ''{…}'' or one id';
CREATE FUNCTION once.discard(ids text[]) RETURNS integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT once.discard(once._dead_letter_ids(ids)) $$;
COMMENT ON FUNCTION once.discard(text[]) IS 'once.discard(uuid[]) for ids written as text, e.g. ARRAY[''0190…'']';
CREATE FUNCTION once.discard(ids text) RETURNS integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT once.discard(once._dead_letter_ids(ids)) $$;
COMMENT ON FUNCTION once.discard(text) IS 'once.discard(uuid[]) for an array literal ''{…}'' or one id';

REVOKE ALL ON FUNCTION once.redrive(text[]), once.redrive(text), once.discard(text[]), once.discard(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.redrive(text[]), once.redrive(text), once.discard(text[]), once.discard(text),
    once._dead_letter_ids(text[]), once._dead_letter_ids(text) TO once_admin;

-- outbox_stats gains blocked as its last column, so CREATE OR REPLACE keeps its grants.
-- blocked (0.3, appended): messages waiting behind their key's head while that head is dead or
-- delayed (once.blocked_keys' reasons 'dead' and 'delayed'). No relay takes them until the
-- head is redriven, discarded or due, so they are not ready, not delayed, and not in
-- oldest_ready_age. Messages behind a head that is ready or in flight stay ready:
-- they go out as soon as it is acked. The blocking heads are few; they are joined by key.
CREATE OR REPLACE VIEW once.outbox_stats AS
SELECT o.topic,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NULL AND o.visible_at <= pg_catalog.now() AND b.key IS NULL) AS ready,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NULL AND o.visible_at > pg_catalog.now() AND o.relay IS NULL AND b.key IS NULL) AS delayed,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NULL AND o.visible_at > pg_catalog.now() AND o.relay IS NOT NULL) AS in_flight,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NOT NULL) AS dead,
       pg_catalog.now() - pg_catalog.min(o.created_at) FILTER (WHERE o.dead_at IS NULL AND o.visible_at <= pg_catalog.now() AND b.key IS NULL) AS oldest_ready_age,
       pg_catalog.count(*) FILTER (WHERE o.dead_at IS NULL AND b.key IS NOT NULL
                                     AND (o.visible_at <= pg_catalog.now() OR o.relay IS NULL)) AS blocked
  FROM once.outbox o
  LEFT JOIN (SELECT d.key, d.key_owner, d.key_seq FROM once.outbox d
              WHERE d.key IS NOT NULL
                AND (d.dead_at IS NOT NULL OR (d.attempt = 0 AND d.visible_at > pg_catalog.now()))
                AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = d.key AND e.key_owner = d.key_owner AND e.key_seq < d.key_seq)) b
         ON b.key = o.key AND b.key_owner = o.key_owner AND o.key_seq > b.key_seq
 GROUP BY o.topic;
COMMENT ON VIEW once.outbox_stats IS
    'Per topic: ready, delayed (deliver_at or retry backoff), in flight (leased), dead, age of the oldest ready message, blocked (behind a dead or delayed key head)';


-- A saga keeps the cause of its failure beside its last error: set by the state
-- machine (core/saga_machine.hpp, State::cause) when the saga leaves running. Sagas that left
-- running under 0.2 take it from their history: the reason of their first transition to
-- compensating, failed or compensated (one index lookup per such saga); the machine state
-- gets it too, so the next decision keeps it.
ALTER TABLE once.saga_instances ADD COLUMN failure_cause text;
UPDATE once.saga_instances s
   SET failure_cause = c.reason,
       machine = s.machine OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('cause', c.reason)
  FROM (SELECT i.saga_id,
               (SELECT t.reason FROM once.saga_transitions t
                 WHERE t.saga_id OPERATOR(pg_catalog.=) i.saga_id AND t.reason IS NOT NULL
                   AND t.to_status OPERATOR(pg_catalog.=) ANY (ARRAY['compensating', 'failed', 'compensated'])
                 ORDER BY t.id LIMIT 1) AS reason
          FROM once.saga_instances i
         WHERE i.status OPERATOR(pg_catalog.=) ANY (ARRAY['compensating', 'failed', 'compensated'])) c
 WHERE c.saga_id OPERATOR(pg_catalog.=) s.saga_id AND c.reason IS NOT NULL;

-- The views' two branches: see sql/src/40_saga.sql.
-- The sagas (and their transitions) that the calling role, or a role whose privileges it has,
-- started: the views' branch for everyone but once_admin (C++, extension/src/pg/saga/saga_views.cpp).
-- The planner pushes no condition into a function, so a caller's conditions apply to these
-- rows only. ROWS 100: their estimate stays small in once_admin's plans, which never run them.
CREATE FUNCTION once._own_sagas()
RETURNS TABLE (saga_id text, name text, version integer, status text, step text, data jsonb, input jsonb,
               deadline timestamptz, attempts integer, last_error text, created_at timestamptz,
               updated_at timestamptz, finished_at timestamptz, failure_cause text)
AS 'MODULE_PATHNAME', 'once_own_sagas' LANGUAGE C STABLE ROWS 100;
CREATE FUNCTION once._own_saga_history()
RETURNS TABLE (saga_id text, at timestamptz, from_status text, to_status text, step text, event text,
               reason text, message_id text, id bigint, name text)
AS 'MODULE_PATHNAME', 'once_own_saga_history' LANGUAGE C STABLE ROWS 100;
REVOKE ALL ON FUNCTION once._own_sagas(), once._own_saga_history() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once._own_sagas(), once._own_saga_history() TO once_admin, once_producer;
-- The sagas a role started, for those functions.
CREATE INDEX saga_instances_started_by ON once.saga_instances (started_by);

CREATE OR REPLACE VIEW once.sagas WITH (security_barrier) AS
SELECT s.saga_id, s.name, s.version, s.status, s.step, s.data, s.input, s.deadline, s.attempts,
       s.last_error, s.created_at, s.updated_at, s.finished_at, s.failure_cause
  FROM once.saga_instances s
 WHERE pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE')
UNION ALL
SELECT o.saga_id, o.name, o.version, o.status, o.step, o.data, o.input, o.deadline, o.attempts,
       o.last_error, o.created_at, o.updated_at, o.finished_at, o.failure_cause
  FROM once._own_sagas() o
 WHERE NOT pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE');
COMMENT ON VIEW once.sagas IS 'Sagas: status, current step, data, deadline, attempts, last error, failure cause (the caller''s own, or all for once_admin)';


-- Dropping an inbox handler removes its subscriptions: sql/src/30_inbox.sql.
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

-- ---------------------------------------------------------------------------------------
-- The default retry policy has one home, RetryPolicy in the library: the
-- table's column defaults (never used: once.topic_policy writes every column) are gone, and
-- once.topic_policy's NULL arguments take the default policy's values.
ALTER TABLE once.outbox_topic_policies ALTER COLUMN max_attempts DROP DEFAULT,
    ALTER COLUMN backoff_base DROP DEFAULT, ALTER COLUMN backoff_max DROP DEFAULT;

-- The retry policy of topics without one of their own.
CREATE FUNCTION once._outbox_default_policy(
    OUT max_attempts integer, OUT backoff_base interval, OUT backoff_max interval)
AS 'MODULE_PATHNAME', 'once_outbox_default_policy' LANGUAGE C IMMUTABLE;
REVOKE ALL ON FUNCTION once._outbox_default_policy() FROM PUBLIC;

-- max_attempts, backoff_base, backoff_max: NULL (the default) takes the default policy's.
CREATE OR REPLACE FUNCTION once.topic_policy(
    topic        text,
    max_attempts integer  DEFAULT NULL,
    backoff_base interval DEFAULT NULL,
    backoff_max  interval DEFAULT NULL,
    retention    interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d record;
BEGIN
    SELECT * INTO d FROM once._outbox_default_policy();
    max_attempts := COALESCE(max_attempts, d.max_attempts);
    backoff_base := COALESCE(backoff_base, d.backoff_base);
    backoff_max := COALESCE(backoff_max, d.backoff_max);
    PERFORM once._outbox_validate_policy(topic, max_attempts, backoff_base, backoff_max, retention);
    INSERT INTO once.outbox_topic_policies AS p (topic, max_attempts, backoff_base, backoff_max, retention)
    VALUES (topic, max_attempts, backoff_base, backoff_max, retention)
    ON CONFLICT ON CONSTRAINT outbox_topic_policies_pkey DO UPDATE
       SET max_attempts = excluded.max_attempts, backoff_base = excluded.backoff_base,
           backoff_max = excluded.backoff_max, retention = excluded.retention;
END
$$;
-- The ids argument of the admin's functions follows the rule of every ids argument, in the
-- library (one rule, one SQLSTATE: ON211): not NULL, not empty, no NULL element,
-- at most 10,000 ids.
-- (the rule every ids argument follows, relays' included: outbox_args.hpp, message_ids)
CREATE OR REPLACE FUNCTION once._check_dead_letter_ids(ids uuid[]) RETURNS void
AS 'MODULE_PATHNAME', 'once_check_admin_ids' LANGUAGE C;

-- =======================================================================================
-- Idempotency keys get a namespace per role: a key's identity is
-- (scope, key, owner), so a role that stores a key first no longer makes it unusable for
-- another role (0.2 gave that role ON106 for the key's whole ttl). Keys stored by 0.1 (owner
-- NULL) get owner 0, "nobody": they stay shared in their bounded window (see the top of this script).
UPDATE once.keys SET owner = 0 WHERE owner IS NULL;
ALTER TABLE once.keys ALTER COLUMN owner SET NOT NULL;
ALTER TABLE once.keys DROP CONSTRAINT keys_pkey;
ALTER TABLE once.keys ADD CONSTRAINT keys_pkey PRIMARY KEY (scope, key, owner);

-- =======================================================================================
-- Who may start which saga definition: sql/src/40_saga.sql.
CREATE TABLE once.saga_start_grants (
    name       text        NOT NULL,   -- a saga definition's name (it need not be defined yet)
    grantee    oid         NOT NULL,   -- a role (regrole): it and its members may start it
    granted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    granted_by oid         NOT NULL,
    PRIMARY KEY (name, grantee)
);
COMMENT ON TABLE once.saga_start_grants IS 'Roles that may start each saga definition; a definition without rows: every producer';
REVOKE ALL ON TABLE once.saga_start_grants FROM PUBLIC;
GRANT SELECT ON TABLE once.saga_start_grants TO once_admin;

CREATE FUNCTION once.grant_saga_start(role regrole, name text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'once_grant_saga_start' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.grant_saga_start(regrole, text) IS
    'Let role (and its members) start the saga definition; once a definition has a grant, only granted roles may; false if already granted';

CREATE FUNCTION once.revoke_saga_start(role regrole, name text DEFAULT NULL) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM once.saga_start_grants
         WHERE grantee = $1::oid AND ($2 IS NULL OR name = $2)
        RETURNING 1)
    SELECT count(*)::integer FROM gone
$$;
COMMENT ON FUNCTION once.revoke_saga_start(regrole, text) IS
    'Remove the role''s start grant of the definition (of every definition when NULL); returns how many';

REVOKE ALL ON FUNCTION once.grant_saga_start(regrole, text), once.revoke_saga_start(regrole, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.grant_saga_start(regrole, text), once.revoke_saga_start(regrole, text) TO once_admin;

-- =======================================================================================
-- Saga ids are unique per definition: a saga's identity is
-- (name, saga_id), so a role that may start one definition cannot take the ids of another's
-- sagas (0.2: the rightful starter got ON404, or the squatter's saga). Commands carry the
-- definition's name in their payload ("saga"); replies, saga_retry and saga_abort may name it,
-- and must when several definitions have the id (ON408). Sagas started before the update keep
-- working: their ids were unique, so a reply by id alone finds them.
ALTER TABLE once.saga_instances DROP CONSTRAINT saga_instances_pkey;
ALTER TABLE once.saga_instances ADD CONSTRAINT saga_instances_pkey PRIMARY KEY (name, saga_id);
ALTER TABLE once.saga_instances ALTER COLUMN saga_id SET NOT NULL;
CREATE INDEX saga_instances_saga_id ON once.saga_instances (saga_id);
ALTER TABLE once.saga_transitions ADD COLUMN name text;
UPDATE once.saga_transitions t SET name = s.name FROM once.saga_instances s WHERE s.saga_id = t.saga_id;

DROP FUNCTION once._saga_apply(text, jsonb, jsonb, text);

CREATE FUNCTION once._saga_apply(p_saga_id text, event jsonb, output jsonb DEFAULT NULL, message_id text DEFAULT NULL,
                                  p_name text DEFAULT NULL)
RETURNS jsonb
    AS 'MODULE_PATHNAME', 'once_saga_apply' LANGUAGE C VOLATILE;

DROP FUNCTION once.saga_reply(text, text, text, jsonb, text);

CREATE FUNCTION once.saga_reply(saga_id text, step text, outcome text, output jsonb DEFAULT NULL,
                                message_id text DEFAULT NULL, name text DEFAULT NULL)
RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_reply' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_reply(text, text, text, jsonb, text, text) IS
    'Report the outcome of a saga step (name: the saga''s definition, needed when several have the id): applied, duplicate, late (recorded, nothing to do) or rejected (saga failed)';

DROP FUNCTION once.saga_retry(text);

CREATE FUNCTION once.saga_retry(saga_id text, name text DEFAULT NULL) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, '{"type": "retry"}', NULL, NULL, name)->>'status' $$;
COMMENT ON FUNCTION once.saga_retry(text, text) IS 'Resume a failed saga (name: its definition, needed when several have the id) from where it stopped; returns the new status';

DROP FUNCTION once.saga_abort(text, text);

CREATE FUNCTION once.saga_abort(saga_id text, reason text, name text DEFAULT NULL) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, jsonb_build_object('type', 'abort', 'reason', coalesce(reason, 'by hand')), NULL, NULL, name)->>'status' $$;
COMMENT ON FUNCTION once.saga_abort(text, text, text) IS 'Start compensation by hand (name: the saga''s definition, needed when several have the id); returns the new status';

DROP FUNCTION once._saga_due(integer);

CREATE FUNCTION once._saga_due(max integer)
RETURNS TABLE (saga_id text, local jsonb, data jsonb, name text)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.saga_id, s.machine->'local', s.data, s.name
      FROM once.saga_instances s
     WHERE s.deadline <= now()
     ORDER BY s.deadline
     LIMIT max
       FOR UPDATE SKIP LOCKED
$$;

CREATE FUNCTION once._saga_local(p_saga_id text, p_name text)
RETURNS TABLE (local jsonb, data jsonb, run_as regrole)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.machine->'local', s.data, d.run_as
      FROM once.saga_instances s
      JOIN once.saga_definitions d ON d.name = s.name AND d.version = s.version
     WHERE s.saga_id = p_saga_id AND s.name = p_name AND s.machine->>'waiting' = 'local' AND s.status IN ('running', 'compensating')
$$;

CREATE OR REPLACE VIEW once.saga_history WITH (security_barrier) AS
SELECT t.saga_id, t.at, t.from_status, t.to_status, t.step, t.event, t.reason, t.message_id, t.id, t.name
  FROM once.saga_transitions t
 WHERE pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE')
UNION ALL
SELECT o.saga_id, o.at, o.from_status, o.to_status, o.step, o.event, o.reason, o.message_id, o.id, o.name
  FROM once._own_saga_history() o
 WHERE NOT pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE');
COMMENT ON VIEW once.saga_history IS 'Every saga transition with time, reason and the reply message id (of the sagas the caller sees)';

CREATE OR REPLACE FUNCTION once.purge_sagas(max_rows integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    retention interval := once._saga_retention();  -- the registered setting (settings.cpp)
    ids text[];
    names text[];
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RETURN 0;
    END IF;
    SELECT array_agg(s.saga_id), array_agg(s.name) INTO ids, names FROM (
        SELECT s.saga_id, s.name FROM once.saga_instances s
         WHERE s.finished_at < now() - retention
         LIMIT max_rows FOR UPDATE SKIP LOCKED) s;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    -- (name, saga_id) is a saga's identity; replies are recorded per saga id, so they go once
    -- no saga of any definition has the id any more.
    DELETE FROM once.saga_transitions t USING unnest(ids, names) p(saga_id, name)
     WHERE t.saga_id = p.saga_id AND t.name = p.name;
    DELETE FROM once.saga_instances s USING unnest(ids, names) p(saga_id, name)
     WHERE s.saga_id = p.saga_id AND s.name = p.name;
    DELETE FROM once.saga_replies r
     WHERE r.saga_id = ANY (ids)
       AND NOT EXISTS (SELECT FROM once.saga_instances s WHERE s.saga_id = r.saga_id);
    RETURN cardinality(ids);
END
$$;

REVOKE ALL ON FUNCTION once._saga_apply(text, jsonb, jsonb, text, text),
    once.saga_reply(text, text, text, jsonb, text, text), once.saga_retry(text, text),
    once.saga_abort(text, text, text), once._saga_due(integer), once._saga_local(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.saga_retry(text, text), once.saga_abort(text, text, text) TO once_admin;
GRANT EXECUTE ON FUNCTION once.saga_reply(text, text, text, jsonb, text, text) TO once_consumer;

-- WAL transport: message tags and write-back. The objects of sql/src/22_outbox_wal.sql;
-- the key is made here as CREATE EXTENSION makes it (a fresh key per database).
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

-- =======================================================================================
-- once-console addresses a key by (scope, key, owner) and a saga by (name, saga_id):
-- console_key lists a row per owner, console_key_release releases
-- the chosen owner's row, and the saga functions take the saga's definition. The console's
-- sql/src/60_console.sql, verbatim below.

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

REVOKE ALL ON FUNCTION once.console_key(text, text), once.console_saga(text, text),
    once.console_saga_history(text, text, integer), once.console_saga_retry(text, text, text),
    once.console_saga_abort(text, text, text, text), once.console_key_release(text, text, text, oid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.console_key(text, text), once.console_saga(text, text),
    once.console_saga_history(text, text, integer) TO once_console_viewer, once_admin;
GRANT EXECUTE ON FUNCTION once.console_saga_retry(text, text, text), once.console_saga_abort(text, text, text, text),
    once.console_key_release(text, text, text, oid) TO once_console_admin, once_admin;

-- =======================================================================================
-- WAL transport: keyed messages ride the stream. A keyed message
-- the relay writes back is fenced (once.outbox.stream_fence) until the relay has confirmed its
-- slot past the write-back (once.wal_release_fences); once.blocked_keys shows such a key with
-- reason 'fenced'. once.wal_write_back's key_owner and key_seq are in its section above (0.3 is
-- unreleased). sql/src/20_outbox.sql (column, index, view) and 22_outbox_wal.sql.
ALTER TABLE once.outbox ADD COLUMN stream_fence pg_lsn;
-- The slot whose relay fenced the row: only its confirmation releases the fence (relay groups
-- split by topic each have their own slot).
ALTER TABLE once.outbox ADD COLUMN stream_fence_slot name;
CREATE INDEX outbox_stream_fence ON once.outbox (stream_fence) WHERE stream_fence IS NOT NULL;
CREATE OR REPLACE VIEW once.blocked_keys AS
WITH prepared AS MATERIALIZED (
    SELECT b.bucket, x.gid FROM once._outbox_prepared_buckets() b
      JOIN pg_catalog.pg_prepared_xacts x ON x.transaction = b.transaction)
SELECT h.key, h.topic, CASE WHEN h.dead_at IS NOT NULL THEN h.id END AS dead_message_id,
       h.dead_at, h.last_error, h.waiting,
       CASE WHEN h.dead_at IS NOT NULL THEN 'dead' ELSE 'delayed' END AS reason,
       h.id AS held_message_id,
       CASE WHEN h.dead_at IS NULL THEN h.visible_at END AS held_until,
       NULL::text AS prepared_gid, h.key_owner::regrole AS key_owner
  FROM (SELECT d.key, d.key_owner, d.topic, d.id, d.dead_at, d.last_error, d.visible_at,
               (SELECT pg_catalog.count(*) FROM once.outbox w
                 WHERE w.key = d.key AND w.key_owner = d.key_owner AND w.key_seq > d.key_seq) AS waiting
          FROM once.outbox d
         WHERE d.key IS NOT NULL
           AND (d.dead_at IS NOT NULL OR (d.attempt = 0 AND d.visible_at > pg_catalog.now()))
           AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = d.key AND e.key_owner = d.key_owner AND e.key_seq < d.key_seq)) h
 WHERE h.dead_at IS NOT NULL OR h.waiting > 0
UNION ALL
SELECT d.key, d.topic, NULL::uuid, NULL::timestamptz, NULL::text,
       (SELECT pg_catalog.count(*) FROM once.outbox w WHERE w.key = d.key AND w.key_owner = d.key_owner AND w.key_seq > d.key_seq),
       'prepared', d.id, NULL::timestamptz, p.gid, d.key_owner::regrole
  FROM prepared p
  JOIN once.outbox d ON d.key IS NOT NULL AND once._outbox_key_bucket(d.key) = p.bucket
 WHERE d.dead_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = d.key AND e.key_owner = d.key_owner AND e.key_seq < d.key_seq)
UNION ALL
SELECT d.key, d.topic, NULL::uuid, NULL::timestamptz, d.last_error,
       (SELECT pg_catalog.count(*) FROM once.outbox w WHERE w.key = d.key AND w.key_owner = d.key_owner AND w.key_seq > d.key_seq),
       'unclaimed', d.id, NULL::timestamptz, NULL::text, d.key_owner::regrole
  FROM once.outbox d
 WHERE d.key IS NOT NULL AND d.dead_at IS NULL AND d.stream_fence IS NULL
   AND d.visible_at < pg_catalog.now() - interval '5 minutes'
   AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = d.key AND e.key_owner = d.key_owner AND e.key_seq < d.key_seq)
   AND NOT EXISTS (SELECT 1 FROM prepared p WHERE p.bucket = once._outbox_key_bucket(d.key))
UNION ALL
SELECT d.key, d.topic, NULL::uuid, NULL::timestamptz, d.last_error,
       (SELECT pg_catalog.count(*) FROM once.outbox w WHERE w.key = d.key AND w.key_owner = d.key_owner AND w.key_seq > d.key_seq),
       'fenced', d.id, NULL::timestamptz, NULL::text, d.key_owner::regrole
  FROM once.outbox d
 WHERE d.key IS NOT NULL AND d.dead_at IS NULL AND d.stream_fence IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM once.outbox e WHERE e.key = d.key AND e.key_owner = d.key_owner AND e.key_seq < d.key_seq);
COMMENT ON VIEW once.blocked_keys IS
    'Ordering keys held back by their oldest message: dead (redrive or discard it), delayed with messages waiting behind it (expedite or cancel it), held by a prepared transaction (commit or roll it back), due for over 5 minutes and unclaimed (is a relay serving its topic?), or fenced by the WAL transport''s relay (until it confirms its slot past the write-back: is it running?)';

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

-- ------------------------------------------------ a message's content type (content_type)
-- The payload's media type (NULL = application/json): a column of the outbox, an attribute of
-- what once.claim returns, and a parameter of once.send and once.send_many (a new signature:
-- the old ones go, with their grants given again).
ALTER TABLE once.outbox ADD COLUMN content_type text;
ALTER TYPE once.message ADD ATTRIBUTE content_type text;

DROP FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid);
CREATE FUNCTION once.send(
    topic      text,
    payload    jsonb,
    key        text        DEFAULT NULL,
    headers    jsonb       DEFAULT NULL,
    deliver_at timestamptz DEFAULT NULL,
    message_id uuid        DEFAULT NULL,
    content_type text      DEFAULT NULL)
RETURNS uuid
AS 'MODULE_PATHNAME', 'once_send' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid, text) IS
    'Write a message in the caller''s transaction; returns its id (UUID v7). A repeated explicit message_id is a no-op';

DROP FUNCTION once.send_many(text, jsonb[], text[]);
CREATE FUNCTION once.send_many(topic text, payloads jsonb[], keys text[] DEFAULT NULL,
                               content_type text DEFAULT NULL)
RETURNS SETOF uuid
AS 'MODULE_PATHNAME', 'once_send_many' LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION once.send_many(text, jsonb[], text[], text) IS
    'Write many messages of one topic in one statement; returns their ids in array order';

REVOKE ALL ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid, text),
    once.send_many(text, jsonb[], text[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid, text),
    once.send_many(text, jsonb[], text[], text) TO once_producer;

-- =======================================================================================
-- Poison inbox messages keep a copy of the message (topic, payload, headers), so that
-- once.inbox_retry delivers them again from it: a relay that acknowledged the message at its
-- source (the inbound relay, once-relay --source) never brings it again. Poison rows record
-- their topic.
ALTER TABLE once.inbox_failures ADD COLUMN topic text, ADD COLUMN payload jsonb, ADD COLUMN headers jsonb;
COMMENT ON TABLE once.inbox_failures IS 'Failed attempts per message, with a copy of the message when given; at max_attempts once.inbox gets a poison row';

CREATE FUNCTION once.inbox_failed(source text, message_id text, error text, topic text, payload jsonb, headers jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'once_inbox_failed' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.inbox_failed(text, text, text, text, jsonb, jsonb) IS
    'once.inbox_failed keeping a copy of the message, so that once.inbox_retry can deliver it again if it becomes poison';
REVOKE ALL ON FUNCTION once.inbox_failed(text, text, text, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.inbox_failed(text, text, text, text, jsonb, jsonb) TO once_consumer;

CREATE OR REPLACE FUNCTION once.inbox_retry(source text, message_id text)
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

CREATE OR REPLACE VIEW once.inbox_poison AS
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
