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
