-- pg_once's locks are out of reach of SQL's advisory lock functions.
-- On 0.1 they were pg_advisory_xact_lock(class, hash) locks: any role that could connect
-- could take pg_advisory_lock(1869505381, <hash>) and hang once.run / once.send for the key.
-- SQL's advisory locks always have objsubid (field4) 1 or 2; pg_once's have 28526 ("on").
BEGIN;
SELECT plan(4);

SELECT lives_ok($$SELECT * FROM once.run('s', 'k', '{}', 'SELECT 1')$$, 'once.run takes its key lock');
SELECT lives_ok($$SELECT once.send('orders.created', '{"id": 1}', key => 'order-99')$$,
                'once.send with a key takes no lock before commit');
-- (the outbox key lock is taken in the pre-commit step; its tag is checked on a prepared
-- transaction in tests/integration/outbox_producer_order.sh)
SELECT is((SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'
             AND objsubid = 28526 AND classid = 1869505381), 1::bigint,
          'the idempotency key lock is pg_once''s own (objsubid 28526)');
SELECT is((SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'
             AND objsubid IN (1, 2)), 0::bigint,
          'no lock pg_once took can be taken or waited for with pg_advisory_lock');

SELECT * FROM finish();
ROLLBACK;
