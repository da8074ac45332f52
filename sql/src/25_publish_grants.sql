-- Who may publish on which topics. NATS (subject permissions), Kafka
-- (topic ACLs) and RabbitMQ (vhost permissions) let an operator say who may publish where;
-- here an admin grants a role publishing on NATS-style topic patterns. While the table is
-- empty every producer may publish on every topic, as in 0.2; once it holds a grant,
-- once.send and once.send_many need one that matches the topic, held by the caller or a role
-- whose privileges it has (ON215 otherwise). Saga commands are sent by pg_once itself and are
-- not checked: their topics are the admin's saga definitions.
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
