-- The gauges once-relay's /metrics shows (docs/relay.md, "Metrics"): per topic ready,
-- delayed, in flight, blocked and dead counts and the oldest ready message's age, and sagas
-- per status. The relay reads them every 15 s or less often, on a connection of its own.
-- Every count is bounded, so a read costs about the same with a 1M-message backlog as with
-- ten: at most 500 topics, found by skipping through the topic index; per topic the first
-- 10000 pending messages in claim order (split into ready / delayed / in flight), and up to
-- 10000 blocked (waiting behind their key's head) and 10000 dead ones. capped = a count
-- reached its bound (the value is then "at least"). The limits are constants, not
-- parameters: with LIMIT $1 the planner assumes a large share of the table. jit is off: the
-- planner's estimate for the bounded scans (about 1.9M with a 1M-message topic) is above
-- jit_above_cost, and compiling took about 1 s of a read whose execution takes milliseconds.
CREATE FUNCTION once.relay_topic_gauges()
RETURNS TABLE (topic text, ready bigint, delayed bigint, in_flight bigint, blocked bigint, dead bigint,
               oldest_ready_age double precision, capped boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
    WITH RECURSIVE t(topic) AS (
        (SELECT o.topic FROM once.outbox o ORDER BY o.topic LIMIT 1)
        UNION ALL
        SELECT (SELECT o.topic FROM once.outbox o WHERE o.topic > t.topic ORDER BY o.topic LIMIT 1)
          FROM t WHERE t.topic IS NOT NULL
    )
    SELECT t.topic, p.ready, p.delayed, p.in_flight, b.n, d.n,
           extract(epoch FROM now() - p.oldest_ready)::double precision,
           (p.total >= 10000 OR b.n >= 10000 OR d.n >= 10000)
      FROM (SELECT t.topic FROM t WHERE t.topic IS NOT NULL LIMIT 500) t
     CROSS JOIN LATERAL (
            SELECT count(*) FILTER (WHERE s.visible_at <= now()) AS ready,
                   count(*) FILTER (WHERE s.visible_at > now() AND s.relay IS NULL) AS delayed,
                   count(*) FILTER (WHERE s.visible_at > now() AND s.relay IS NOT NULL) AS in_flight,
                   count(*) AS total,
                   min(s.created_at) FILTER (WHERE s.visible_at <= now()) AS oldest_ready
              FROM (SELECT o.visible_at, o.relay, o.created_at FROM once.outbox o
                     WHERE o.topic = t.topic
                       AND COALESCE(o.pos, o.id) > '00000000-0000-0000-0000-000000000000'::uuid
                       AND COALESCE(o.pos, o.id) < 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid
                     ORDER BY COALESCE(o.pos, o.id) LIMIT 10000) s) p
     CROSS JOIN LATERAL (
            SELECT count(*) AS n FROM (SELECT 1 FROM once.outbox o
                     WHERE o.topic = t.topic
                       AND COALESCE(o.pos, o.id) = 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid LIMIT 10000) x) b
     CROSS JOIN LATERAL (
            SELECT count(*) AS n FROM (SELECT 1 FROM once.outbox o
                     WHERE o.topic = t.topic
                       AND COALESCE(o.pos, o.id) = '00000000-0000-0000-0000-000000000000'::uuid LIMIT 10000) x) d
     ORDER BY t.topic
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
