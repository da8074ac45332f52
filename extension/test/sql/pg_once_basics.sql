-- make installcheck (PGXS): a packager's smoke test of an installed pg_once. The full suites
-- (pgTAP, isolation, integration) run from the source tree with ./scripts/test.
SET client_min_messages = error;   -- the NOTIFY warning depends on shared_preload_libraries
CREATE EXTENSION pg_once;
RESET client_min_messages;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'pg_once') AS current
  FROM pg_extension WHERE extname = 'pg_once';
-- idempotency: the first call runs, the retry replays, another request is refused
SELECT replayed, response FROM once.run('regress', 'k1', '{"a": 1}', 'SELECT jsonb_build_object(''n'', 1)');
SELECT replayed, response FROM once.run('regress', 'k1', '{"a": 1}', 'SELECT jsonb_build_object(''n'', 2)');
SELECT replayed FROM once.run('regress', 'k1', '{"a": 2}', 'SELECT ''{}''::jsonb');
-- outbox: send, claim, ack
SELECT count(*) FROM (SELECT once.send('regress.topic', '{"x": 1}', key => 'k')) s;
SELECT topic, payload, key FROM once.claim('regress-relay', 10, '1 minute');
SELECT once.ack('regress-relay', array_agg(id)) FROM once.outbox;
-- inbox: a duplicate is caught
SELECT once.receive('regress', 'm1'), once.receive('regress', 'm1');
DROP EXTENSION pg_once;
SELECT count(*) FROM pg_namespace WHERE nspname = 'once';
