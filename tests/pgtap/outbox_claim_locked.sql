-- once.claim_locked: messages taken in the caller's transaction with no
-- lease write, settled with the usual ack / nack / dead / extend before COMMIT. What COMMIT
-- and ROLLBACK do and how two relays share the outbox: tests/isolation/specs/outbox_claim_locked.spec.
BEGIN;
SELECT plan(28);

SELECT once.send('lk.a', jsonb_build_object('n', n), key => 'k' || (n % 2)) FROM generate_series(1, 4) n;
SELECT once.send('lk.b', jsonb_build_object('n', n)) FROM generate_series(1, 2) n;

-- ------------------------------------------------------------------ claim
CREATE TEMP TABLE got AS SELECT * FROM once.claim_locked('r1', 10, '{lk.a}');
SELECT results_eq($$SELECT payload->>'n', key, attempt FROM got ORDER BY id$$,
    $$VALUES ('1', 'k1', 1), ('2', 'k0', 1)$$,
    'one message per key, oldest first, attempt counts this delivery');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE id IN (SELECT id FROM got)), 0,
    'the claimed rows are deleted in this transaction');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE relay IS NOT NULL), 0, 'no lease is written');
SELECT is((SELECT count(*)::int FROM once.claim_locked('r1', 10, '{lk.a}')), 0,
    'a second claim in the transaction does not hand out what follows an unsettled key');
SELECT is(once.extend('r1', ARRAY(SELECT id FROM got), '1 minute'), 2,
    'extend counts lock-held messages (their lock lasts as long as the transaction)');

-- ------------------------------------------------------------------ ack
SELECT is(once.ack('r1', ARRAY(SELECT id FROM got)), 2, 'ack settles both');
SELECT is(once.ack('r1', ARRAY(SELECT id FROM got)), 0, 'a second ack of the same ids counts nothing');
SELECT results_eq($$SELECT payload->>'n' FROM once.claim_locked('r1', 10, '{lk.a}') ORDER BY id$$,
    $$VALUES ('3'), ('4')$$, 'after the ack, the keys'' next messages are handed out');

-- ------------------------------------------------------------------ a single statement
SELECT is(once.ack('r1', ARRAY(SELECT id FROM once.claim_locked('r1', 10, '{lk.>}'))), 2,
    'ack(claim_locked()) in one statement: the two lk.b messages');
SELECT is(once.ack('r1', ARRAY(SELECT id FROM once.claim_locked('r1', 10))), 0,
    'the lk.a messages claimed above are still held: nothing else to take');

-- ------------------------------------------------------------------ nack and dead put the message back
SELECT once.topic_policy('lk.retry', max_attempts => 2, backoff_base => '1 minute', backoff_max => '1 minute');
SELECT once.send('lk.retry', '{"r": 1}', key => 'kr', headers => '{"h": "v"}');
SELECT once.send('lk.retry', '{"r": 2}', key => 'kr');
CREATE TEMP TABLE r1 AS SELECT * FROM once.claim_locked('r1', 10, '{lk.retry}');
SELECT is((SELECT count(*)::int FROM r1), 1, 'one message of key kr');
SELECT is(once.nack('r1', (SELECT id FROM r1), 'sink said 503'), 'retry', 'nack: retry');
SELECT results_eq($$SELECT attempt, last_error, visible_at > now(), relay IS NULL, dead_at IS NULL,
                           headers->>'h', key FROM once.outbox WHERE id = (SELECT id FROM r1)$$,
    $$VALUES (1, 'sink said 503', true, true, true, 'v'::text, 'kr'::text)$$,
    'the message is back with its attempt counted, the error, a backoff and everything it held');
SELECT is((SELECT count(*)::int FROM once.claim_locked('r1', 10, '{lk.retry}')), 0,
    'while it waits for its retry, the next message of its key waits too');
SELECT is(once.nack('r1', (SELECT id FROM r1), 'again'), 'stale',
    'a message given back cannot be given back twice: r1 holds it no more');
UPDATE once.outbox SET visible_at = now(), pos = NULL WHERE id = (SELECT id FROM r1);
CREATE TEMP TABLE r2 AS SELECT * FROM once.claim_locked('r1', 10, '{lk.retry}');
SELECT is((SELECT attempt FROM r2), 2, 'claimed again: attempt 2');
SELECT is(once.nack('r1', (SELECT id FROM r2), 'still 503'), 'dead', 'nack at max_attempts: dead');
SELECT is((SELECT count(*)::int FROM once.dead_letters WHERE id = (SELECT id FROM r2) AND attempt = 2), 1,
    'a dead letter with both attempts');
SELECT once.send('lk.poison', '{"p": 1}');
SELECT is(once.dead('r1', (SELECT id FROM once.claim_locked('r1', 1, '{lk.poison}')), '400 bad request'), 'dead',
    'dead: refused for good at once');

-- ------------------------------------------------------------------ savepoints
SELECT once.send('lk.sp', '{"s": 1}');
SAVEPOINT a;
CREATE TEMP TABLE sp AS SELECT * FROM once.claim_locked('r1', 10, '{lk.sp}');
ROLLBACK TO SAVEPOINT a;
SELECT is((SELECT count(*)::int FROM once.outbox WHERE topic = 'lk.sp'), 1,
    'a claim rolled back to a savepoint gives the message back');
CREATE TEMP TABLE sp2 AS SELECT * FROM once.claim_locked('r1', 10, '{lk.sp}');
SAVEPOINT b;
SELECT is(once.ack('r1', ARRAY(SELECT id FROM sp2)), 1, 'ack inside a savepoint');
ROLLBACK TO SAVEPOINT b;
SELECT is(once.ack('r1', ARRAY(SELECT id FROM sp2)), 1, 'after ROLLBACK TO, the message is unsettled again');

-- ------------------------------------------------------------------ delivered history
SELECT once.topic_policy('lk.kept', retention => '1 day');
SELECT once.send('lk.kept', '{"k": 1}'), once.send('lk.kept', '{"k": 2}');
CREATE TEMP TABLE kept AS SELECT * FROM once.claim_locked('r1', 10, '{lk.kept}');
SELECT is(once.ack('r1', ARRAY(SELECT id FROM kept WHERE payload->>'k' = '1')), 1, 'ack one');
SELECT is(once.nack('r1', (SELECT id FROM kept WHERE payload->>'k' = '2'), 'x'), 'retry', 'nack the other');
SELECT results_eq($$SELECT payload->>'k', relay FROM once.outbox_delivered WHERE topic = 'lk.kept'$$,
    $$VALUES ('1', 'r1'::text)$$, 'only the delivered one is in the history');

-- ------------------------------------------------------------------ bad input
SELECT throws_ok($$SELECT * FROM once.claim_locked('r1', 0)$$, 'ON206', NULL, 'batch 0');
SELECT throws_ok($$SELECT * FROM once.claim_locked(NULL, 1)$$, 'ON208', NULL, 'relay NULL');
SELECT throws_ok($$SELECT * FROM once.claim_locked('r1', 1, '{}')$$, 'ON301', NULL, 'topics empty');

SELECT * FROM finish();
ROLLBACK;
