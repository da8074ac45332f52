-- Every once.* setting is registered, validated and out of reach of unprivileged roles.
-- On 0.1 once.saga_retention was a bare placeholder: a relay could
-- SET once.saga_retention = '-100 years' and once.purge() deleted sagas that had just finished.
-- pg_once's library is not loaded yet when this file starts (plan() is pgTAP's): the first
-- SET below lands on a placeholder, as in a session of a server without preloading.
BEGIN;
SELECT plan(9);

CREATE ROLE relay_user LOGIN;
CREATE ROLE admin_user LOGIN;
GRANT once_relay TO relay_user;
GRANT once_admin TO admin_user;
INSERT INTO once.saga_definitions (name, version, definition, source) VALUES ('s', 1, '{}', '{}');
INSERT INTO once.saga_instances (saga_id, name, version, data, machine, status, step, finished_at)
VALUES ('just-finished', 's', 1, '{}', '{}', 'completed', 'done', now() - interval '1 hour');

SET ROLE admin_user;
-- Before the library is loaded this lands on a placeholder; with pg_once preloaded it is refused.
DO $$BEGIN
    PERFORM set_config('once.saga_retention', '-100 years', false);
EXCEPTION WHEN insufficient_privilege THEN NULL;
END$$;
SELECT is(once.purge(1000) >= 0, true, 'once.purge runs (and loads the library)');
RESET ROLE;
SELECT is((SELECT count(*) FROM once.saga_instances WHERE saga_id = 'just-finished'), 1::bigint,
          'a placeholder value set by an unprivileged role is discarded: the saga is kept');
SELECT is(current_setting('once.saga_retention'), '7d', 'once.saga_retention is back at its default');

SET ROLE relay_user;
SELECT throws_ok($$SET once.saga_retention = '1min'$$, '42501', NULL, 'a relay cannot change once.saga_retention');
SELECT throws_ok($$SET once.max_payload_bytes = 100000000$$, '42501', NULL, 'nor once.max_payload_bytes');
SELECT throws_ok($$SET once.notify_interval = 0$$, '55P02', NULL, 'nor once.notify_interval (server-wide)');
RESET ROLE;
SELECT throws_ok($$SET once.saga_retention = '-100 years'$$, '22023', NULL, 'a negative retention is refused');
SELECT is((SELECT count(*) FROM pg_settings WHERE name LIKE 'once.%' AND context NOT IN ('superuser', 'sighup', 'postmaster')
              AND name NOT IN ('once.traceparent', 'once.tracestate')),
          0::bigint, 'every once.* setting but the trace context is registered and only superusers or the server config set it');
SET LOCAL once.saga_retention = '1min';
SELECT is(once.purge(1000) >= 1, true, 'a superuser may shorten the retention; the old saga is purged');

SELECT * FROM finish();
ROLLBACK;
