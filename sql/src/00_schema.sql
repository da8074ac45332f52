-- pg_once: schema, roles, privileges.
-- This file and its siblings in sql/src/ are the current version (default_version in
-- sql/pg_once.control), concatenated in name order into pg_once--<version>.sql at build time
-- (one concern per file). Released versions are frozen: sql/pg_once--0.1.sql is 0.1 as
-- shipped, and every change made here since is also written, by hand, into the upgrade
-- script sql/pg_once--<previous>--<version>.sql (the upgrade test compares both ways).

\echo Use "CREATE EXTENSION pg_once" to load this file. \quit

-- Roles are cluster-wide and may already exist (pg_once installed in another database).
-- They are NOLOGIN groups: grant them to your application's login roles.
DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['once_producer', 'once_consumer', 'once_relay', 'once_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END
$roles$;

-- Created here, not through the control file, so the schema is an extension member and
-- DROP EXTENSION removes it (as pg_cron does).
CREATE SCHEMA once;
COMMENT ON SCHEMA once IS 'pg_once: idempotency keys, transactional outbox, inbox and sagas';

-- Nobody but the roles may even look inside; the tables are reached through functions.
REVOKE ALL ON SCHEMA once FROM PUBLIC;
GRANT USAGE ON SCHEMA once TO once_producer, once_consumer, once_relay, once_admin;
GRANT once_producer, once_consumer, once_relay TO once_admin;

-- Self-test of the C++/PostgreSQL error boundary (see extension/src/pg/common/selftest.cpp).
CREATE FUNCTION once.guard_selftest(mode text) RETURNS text
    AS 'MODULE_PATHNAME', 'once_guard_selftest' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once.guard_selftest(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.guard_selftest(text) TO once_admin;
