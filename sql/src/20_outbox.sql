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
    key_owner   oid,                               -- (0.3) whose order the key is: the sending role (per-key order
                                                   -- is per role); 0 for keyed messages sent before 0.3; NULL without key
    stream_fence pg_lsn,                           -- (0.3) a keyed message the WAL transport's relay wrote back: not
                                                   -- claimable until the relay confirmed the slot up to this position
                                                   -- (once.wal_release_fences); NULL otherwise
    stream_fence_slot name,                        -- (0.3) the replication slot whose relay wrote the fenced row back:
                                                   -- only that slot's confirmation releases the fence; NULL unfenced
    content_type text,                             -- (0.3) the payload's media type (once.send's content_type);
                                                   -- NULL = application/json
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
-- Fenced write-backs of the WAL transport (0.3): few, released within a confirmation or two.
CREATE INDEX outbox_stream_fence ON once.outbox (stream_fence) WHERE stream_fence IS NOT NULL;
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
    created_at timestamptz,
    content_type text      -- (0.3) NULL = application/json
);

-- Per-topic retry policy and delivered-history retention. Topics without a row use the
-- default policy (once._outbox_default_policy(): RetryPolicy in core/outbox_policy.hpp, its
-- one home) and keep no history.
CREATE TABLE once.outbox_topic_policies (
    topic        text     PRIMARY KEY,
    max_attempts integer  NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    backoff_base interval NOT NULL,
    backoff_max  interval NOT NULL,
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
    message_id uuid        DEFAULT NULL,
    content_type text      DEFAULT NULL)
RETURNS uuid
AS 'MODULE_PATHNAME', 'once_send' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid, text) IS
    'Write a message in the caller''s transaction; returns its id (UUID v7). A repeated explicit message_id is a no-op';

CREATE FUNCTION once.send_many(topic text, payloads jsonb[], keys text[] DEFAULT NULL,
                               content_type text DEFAULT NULL)
RETURNS SETOF uuid
AS 'MODULE_PATHNAME', 'once_send_many' LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION once.send_many(text, jsonb[], text[], text) IS
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

-- Internal: once.discard / once.cancel removed messages of these keys, sent by these roles
-- (key_owner; their next messages are promoted at commit).
CREATE FUNCTION once._outbox_keys_released(keys text[], owners oid[]) RETURNS void
AS 'MODULE_PATHNAME', 'once_outbox_keys_released' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once._outbox_keys_released(text[], oid[]) FROM PUBLIC;

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

-- max_attempts, backoff_base, backoff_max: NULL (the default) takes the default policy's.
CREATE FUNCTION once.topic_policy(
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
COMMENT ON FUNCTION once.topic_policy(text, integer, interval, interval, interval) IS
    'Set a topic''s retry policy (max attempts, backoff window) and delivered-history retention';

-- The retry policy of topics without one of their own.
CREATE FUNCTION once._outbox_default_policy(
    OUT max_attempts integer, OUT backoff_base interval, OUT backoff_max interval)
AS 'MODULE_PATHNAME', 'once_outbox_default_policy' LANGUAGE C IMMUTABLE;
REVOKE ALL ON FUNCTION once._outbox_default_policy() FROM PUBLIC;

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
-- (deliver_at in the future, never delivered) and others wait behind it: a delayed message
-- holds back the later ones of its key and role, and that must show. reason,
-- held_message_id, held_until and prepared_gid are appended columns (views only grow at the end).
-- Also the keys a prepared transaction holds (reason 'prepared', prepared_gid):
-- relays skip them until it is committed or rolled back; and heads that
-- have been due for over 5 minutes without a relay taking them (reason 'unclaimed': no relay
-- serves the topic, or the relays are far behind); and heads that the WAL
-- transport's relay wrote back and fenced (reason 'fenced': not claimable until the relay has
-- confirmed the slot past the write-back, so the key's stream messages committed before it go
-- back behind it first; once.wal_release_fences, docs/design.md).
CREATE VIEW once.blocked_keys AS
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
REVOKE ALL ON TABLE once.blocked_keys FROM PUBLIC;
GRANT SELECT ON TABLE once.blocked_keys TO once_admin, once_relay;

-- The ids argument of the admin's functions follows the rule of every ids argument, in the
-- library (one rule, one SQLSTATE: ON211): not NULL, not empty, no NULL element,
-- at most 10,000 ids.
-- (the rule every ids argument follows, relays' included: outbox_args.hpp, message_ids)
CREATE FUNCTION once._check_dead_letter_ids(ids uuid[]) RETURNS void
AS 'MODULE_PATHNAME', 'once_check_admin_ids' LANGUAGE C;
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
COMMENT ON FUNCTION once.discard(uuid[]) IS
    'Delete dead letters for good (releases their keys); returns how many were deleted';

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

-- ----------------------------------------------------------------------------- statistics

-- blocked (0.3, appended): messages waiting behind their key's head while that head is dead or
-- delayed (once.blocked_keys' reasons 'dead' and 'delayed'). No relay takes them until the
-- head is redriven, discarded or due, so they are not ready, not delayed, and not in
-- oldest_ready_age. Messages behind a head that is ready or in flight stay ready:
-- they go out as soon as it is acked. The blocking heads are few; they are joined by key.
CREATE VIEW once.outbox_stats AS
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

REVOKE ALL ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid, text),
    once.send_many(text, jsonb[], text[], text),
    once.claim(text, integer, interval, text[]),
    once.claim_locked(text, integer, text[]),
    once.ack(text, uuid[]),
    once.nack(text, uuid, text, interval),
    once.dead(text, uuid, text),
    once.extend(text, uuid[], interval),
    once.topic_policy(text, integer, interval, interval, interval),
    once.redrive(uuid[]),
    once.discard(uuid[]),
    once.redrive(text[]), once.redrive(text), once.discard(text[]), once.discard(text),
    once.purge_outbox(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.send(text, jsonb, text, jsonb, timestamptz, uuid, text),
    once.send_many(text, jsonb[], text[], text) TO once_producer;
GRANT EXECUTE ON FUNCTION once.claim(text, integer, interval, text[]),
    once.claim_locked(text, integer, text[]),
    once.ack(text, uuid[]),
    once.nack(text, uuid, text, interval),
    once.dead(text, uuid, text),
    once.extend(text, uuid[], interval) TO once_relay;
GRANT EXECUTE ON FUNCTION once.topic_policy(text, integer, interval, interval, interval),
    once.redrive(uuid[]),
    once.discard(uuid[]),
    once.redrive(text[]), once.redrive(text), once.discard(text[]), once.discard(text),
    once._dead_letter_ids(text[]), once._dead_letter_ids(text) TO once_admin;

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
