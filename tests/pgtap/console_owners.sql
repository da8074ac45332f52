-- once-console addresses a key by (scope, key, owner) and a saga by (name, saga_id):
-- console_key lists a row per owner, console_key_release releases the row of the
-- owner it is given and no other, the saga functions read and act on one definition's saga.
BEGIN;
SELECT plan(17);

CREATE ROLE console_owner_a NOLOGIN;
CREATE ROLE console_owner_b NOLOGIN;
GRANT once_producer TO console_owner_a, console_owner_b;
SET LOCAL ROLE console_owner_a;
SELECT state FROM once.key_acquire('POST /refunds', 'k-1', '{"order": 1}', '1 hour');
SET LOCAL ROLE console_owner_b;
SELECT state FROM once.key_acquire('POST /refunds', 'k-1', '{"order": 2}', '1 hour');
SELECT state FROM once.key_acquire('POST /refunds', 'k-done', '{"order": 3}', '1 hour');
SELECT once.key_complete('POST /refunds', 'k-done', '{"ok": true}', 200);
RESET ROLE;

SELECT throws_ok($$SELECT once.key_release('POST /refunds', 'k-1')$$, 'ON106', NULL,
                 'key_release cannot tell which of two inherited rows (the reason for the owner argument)');

SET LOCAL ROLE once_console_viewer;
SELECT is((SELECT string_agg(owner || ' ' || owner_id || ' ' || state, ', ') FROM once.console_key('POST /refunds', 'k-1')),
          (SELECT string_agg(r.rolname || ' ' || r.oid || ' in_progress', ', ' ORDER BY r.oid) FROM pg_roles r
            WHERE r.rolname IN ('console_owner_a', 'console_owner_b')),
          'console_key lists a row per owner, with its oid, in the order of the oid');
SELECT throws_ok($$SELECT once.console_key_release('mallory', 'POST /refunds', 'k-1', 'console_owner_a'::regrole::oid)$$,
                 '42501', NULL, 'a viewer cannot release');
SET LOCAL ROLE once_console_admin;
SELECT is(once.console_key_release('ops', 'POST /refunds', 'k-1', 'console_owner_a'::regrole::oid), true,
          'the admin releases console_owner_a''s row');
SELECT is((SELECT string_agg(owner::text, ', ') FROM once.console_key('POST /refunds', 'k-1')),
          'console_owner_b', 'console_owner_b''s row stays');
SELECT is(once.console_key_release('ops', 'POST /refunds', 'k-1', 'console_owner_a'::regrole::oid), false,
          'releasing it again finds nothing');
SELECT is(once.console_key_release('ops', 'POST /refunds', 'k-done', 'console_owner_b'::regrole::oid), false,
          'a completed key is not released (as with key_release: only an in-progress one)');
SELECT is(once.console_key_release('ops', 'POST /refunds', 'k-1', 0), false,
          'owner 0 is the row stored by 0.1, which this key has not');
SELECT throws_ok($$SELECT once.console_key_release('ops', 'POST /refunds', 'k-1', NULL)$$, '22023', NULL,
                 'the owner must be given');
RESET ROLE;
SELECT results_eq($$SELECT ids, affected FROM once.console_actions WHERE action = 'key_release' ORDER BY id$$,
                  $$VALUES (ARRAY['POST /refunds', 'k-1', 'console_owner_a'], 1),
                           (ARRAY['POST /refunds', 'k-1', 'console_owner_a'], 0),
                           (ARRAY['POST /refunds', 'k-done', 'console_owner_b'], 0),
                           (ARRAY['POST /refunds', 'k-1', '0'], 0)$$,
                  'each release is recorded with the owner, and what it changed');
-- console_owner_b's key is its own again: its next call with the key waits for it, not a's.
SET LOCAL ROLE console_owner_b;
SELECT is((SELECT state FROM once.key_acquire('POST /refunds', 'k-1', '{"order": 2}', '1 hour')), 'busy',
          'console_owner_b still holds its key');
RESET ROLE;

-- Two definitions with the same saga id.
SELECT once.saga_define('cafe', '{"steps": [{"name": "reserve", "action": {"topic": "stock.reserve"},
                                             "compensation": {"topic": "stock.release"}}]}');
SELECT once.saga_define('gift', '{"steps": [{"name": "wrap", "action": {"topic": "gift.wrap"},
                                             "compensation": {"topic": "gift.unwrap"}}]}');
SELECT once.saga_start('cafe', 'twin', '{"n": 1}');
SELECT once.saga_start('gift', 'twin', '{"n": 2}');
SET LOCAL ROLE once_console_viewer;
SELECT results_eq($$SELECT name, input FROM once.console_saga('gift', 'twin')$$,
                  $$VALUES ('gift', '{"n": 2}'::jsonb)$$, 'console_saga reads the saga of the definition named');
SELECT results_eq($$SELECT DISTINCT step FROM once.console_saga_history('gift', 'twin') WHERE step IS NOT NULL$$,
                  $$VALUES ('wrap')$$, 'console_saga_history reads that saga''s transitions only');
SET LOCAL ROLE once_console_admin;
SELECT is(once.console_saga_abort('ops', 'cafe', 'twin', 'test'), 'compensating', 'the admin aborts the cafe saga');
SELECT throws_ok($$SELECT once.console_saga_retry('ops', NULL, 'twin')$$, '22023', NULL,
                 'a saga action needs the definition');
RESET ROLE;
SELECT results_eq($$SELECT name, status FROM once.saga_instances WHERE saga_id = 'twin' ORDER BY name$$,
                  $$VALUES ('cafe', 'compensating'), ('gift', 'running')$$, 'the gift saga with the same id still runs');
SELECT results_eq($$SELECT ids, result FROM once.console_actions WHERE action = 'saga_abort'$$,
                  $$VALUES (ARRAY['cafe', 'twin'], 'compensating: test')$$, 'the abort is recorded with the definition');

SELECT * FROM finish();
ROLLBACK;
