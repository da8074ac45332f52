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
