-- pg_once 0.2 -> 0.3. Written by hand: every change made in sql/src since 0.2 was released,
-- in the order the sections were added. The upgrade test (tests/upgrade/run.sh) checks that
-- a database updated with this script has exactly the catalog of a fresh 0.3 install, and
-- that data written by 0.1 and 0.2 keeps working.

\echo Use "ALTER EXTENSION pg_once UPDATE TO '0.3'" to load this file. \quit

-- ---------------------------------------------------------------------------------------
-- Idempotency keys stored by 0.1 have no owner and were shared by every producer until they
-- expired, with a ttl that had no upper bound (issue 20, finding 7). From 0.3 that window
-- ends at most 24 hours (the default ttl) after the update; the first role to complete or
-- take over such a key becomes its owner (the library does that).
UPDATE once.keys
   SET expires_at = pg_catalog.now() OPERATOR(pg_catalog.+) interval '24 hours'
 WHERE owner IS NULL
   AND expires_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '24 hours');

-- ---------------------------------------------------------------------------------------
-- Sagas are visible to the role that started them (issue 20, finding 9): once_producer could
-- read every saga's data, step outputs included.
ALTER TABLE once.saga_instances ADD COLUMN started_by oid;

-- A saga's data holds step outputs (payment tokens, addresses): a role sees the sagas that
-- it, or a role whose privileges it has, started; once_admin sees all (issue 20, finding 9).
-- Sagas started before 0.3 have no starter and are shown to once_admin only. The views are
-- security barriers, so a caller's leaky function in a WHERE clause never sees other rows
-- (current_user in a view is the querying role).
CREATE OR REPLACE VIEW once.sagas WITH (security_barrier) AS
SELECT s.saga_id, s.name, s.version, s.status, s.step, s.data, s.input, s.deadline, s.attempts,
       s.last_error, s.created_at, s.updated_at, s.finished_at
  FROM once.saga_instances s
 WHERE pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE')
    OR (s.started_by IS NOT NULL AND pg_catalog.pg_has_role(current_user, s.started_by, 'USAGE'));
COMMENT ON VIEW once.sagas IS 'Sagas: status, current step, data, deadline, attempts, last error (the caller''s own, or all for once_admin)';

CREATE OR REPLACE VIEW once.saga_history WITH (security_barrier) AS
SELECT t.saga_id, t.at, t.from_status, t.to_status, t.step, t.event, t.reason, t.message_id, t.id
  FROM once.saga_transitions t
 WHERE pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE')
    OR EXISTS (SELECT FROM once.saga_instances s
                WHERE s.saga_id = t.saga_id AND s.started_by IS NOT NULL
                  AND pg_catalog.pg_has_role(current_user, s.started_by, 'USAGE'));
COMMENT ON VIEW once.saga_history IS 'Every saga transition with time, reason and the reply message id (of the sagas the caller sees)';

-- ---------------------------------------------------------------------------------------
-- The relays' maintenance lock in pg_once's own lock space (issue 20, finding 13): 0.2's
-- relays used pg_try_advisory_lock, which any role could take first.
CREATE FUNCTION once.relay_maintenance_lock() RETURNS boolean
AS 'MODULE_PATHNAME', 'once_relay_maintenance_lock' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.relay_maintenance_lock() IS
    'Take the relays'' maintenance lock for this session if it is free; true when this session holds it';
REVOKE ALL ON FUNCTION once.relay_maintenance_lock() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.relay_maintenance_lock() TO once_relay, once_admin;

-- ---------------------------------------------------------------------------------------
-- Publishing grants per topic pattern (issue 20, finding 10): sql/src/25_publish_grants.sql.
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
