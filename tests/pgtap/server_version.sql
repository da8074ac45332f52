-- What pg_once does differently per PostgreSQL major (extension/src/pg/common/compat.hpp), checked on
-- the server this suite runs on. The rest of the suite is the same on every major.
BEGIN;
SELECT plan(4);

-- The library that answers is the version the SQL objects are (the magic block carries it on
-- 18 and later).
SELECT is(once.send('server.version', '{}') IS NOT NULL, true, 'the library serves this database');
-- (Through EXECUTE: before 18 the function does not exist, and a CASE would not parse.)
CREATE FUNCTION pg_temp.loaded_version() RETURNS text LANGUAGE plpgsql AS $$
DECLARE v text;
BEGIN
    EXECUTE $q$SELECT version FROM pg_catalog.pg_get_loaded_modules() WHERE module_name = 'pg_once'$q$ INTO v;
    RETURN v;
END$$;
SELECT CASE WHEN current_setting('server_version_num')::int >= 180000 THEN
    is(pg_temp.loaded_version(),
       (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_once'),
       'pg_get_loaded_modules() names pg_once with its version (PG_MODULE_MAGIC_EXT, 18+)')
ELSE skip('pg_get_loaded_modules() exists from PostgreSQL 18 on') END;

-- The handler ACL check (object_aclcheck from 16, pg_proc_aclcheck before) is inbox_security.sql's.

-- The idempotency key lookup's own index scan (index_beginscan, whose signature changed in 18).
SELECT is((SELECT replayed FROM once.run('version', 'k', '{"a":1}', 'SELECT 1')), false, 'a new key runs');
SELECT is((SELECT replayed FROM once.run('version', 'k', '{"a":1}', 'SELECT 1')), true,
          'the same key is found by the index scan and replays');
SELECT * FROM finish();
ROLLBACK;
