-- once.key_acquire / key_checkpoint / key_complete / key_release, expiry and purge.
BEGIN;
SELECT plan(32);

-- acquire -> busy -> (lease expires) -> takeover with checkpoint -> complete -> replay
SELECT results_eq($$SELECT state, attempt FROM once.key_acquire('pay', 'p1', '{"amount": 5}')$$,
                  $$VALUES ('acquired', 1)$$, 'an absent key is acquired (attempt 1)');
SELECT results_eq($$SELECT state, response, attempt FROM once.key_acquire('pay', 'p1', '{"amount": 5}')$$,
                  $$VALUES ('busy', NULL::jsonb, 1)$$, 'while the lease runs, others are told busy');
SELECT throws_ok($$SELECT * FROM once.key_acquire('pay', 'p1', '{"amount": 6}')$$, 'ON102', NULL,
                 'another request with the key is refused (ON102)');
SELECT throws_ok($$SELECT * FROM once.run('pay', 'p1', '{"amount": 5}', 'SELECT 1')$$, 'ON103', NULL,
                 'once.run on a key whose lease is held is busy (ON103)');
SELECT lives_ok($$SELECT once.key_checkpoint('pay', 'p1', 'charge_created', '{"charge": "ch_1"}', 1)$$,
                'the holder records a checkpoint');
SELECT throws_ok($$SELECT once.key_checkpoint('pay', 'p1', 'x', NULL, 2)$$, 'ON104', NULL,
                 'a checkpoint with the wrong attempt is refused (ON104)');

UPDATE once.keys SET locked_until = now() - interval '1 second' WHERE key = 'p1';  -- the holder crashed
SELECT results_eq(
    $$SELECT state, attempt, recovery_point, checkpoint FROM once.key_acquire('pay', 'p1', '{"amount": 5}')$$,
    $$VALUES ('acquired', 2, 'charge_created', '{"charge": "ch_1"}'::jsonb)$$,
    'an expired lease is taken over with attempt + 1 and the last checkpoint');
SELECT throws_ok($$SELECT once.key_complete('pay', 'p1', '{"late": true}', 200, 1)$$, 'ON104', NULL,
                 'the crashed attempt cannot complete any more (fencing by attempt)');
SELECT lives_ok($$SELECT once.key_complete('pay', 'p1', '{"error": "card declined"}', 402, 2)$$,
                'the current attempt completes, with an error status');
SELECT results_eq($$SELECT state, response, status, attempt FROM once.key_acquire('pay', 'p1', '{"amount": 5}')$$,
                  $$VALUES ('replay', '{"error": "card declined"}'::jsonb, 402, 2)$$,
                  'a completed key replays its stored response and status (errors too)');
SELECT throws_ok($$SELECT once.key_complete('pay', 'p1', '{}')$$, 'ON104', NULL, 'completing twice is refused');
SELECT is(once.key_release('pay', 'p1'), false, 'a completed key cannot be released');
SELECT results_eq($$SELECT once.run('pay', 'p1', '{"amount": 5}', 'SELECT 1')$$,
                  $$SELECT ROW(true, '{"error": "card declined"}'::jsonb)$$, 'once.run replays a key_complete response');

-- release forgets a failed attempt
SELECT is((SELECT state FROM once.key_acquire('pay', 'p2', '{}')), 'acquired', 'p2 acquired');
SELECT is(once.key_release('pay', 'p2', 7), false, 'release with the wrong attempt does nothing');
SELECT is(once.key_release('pay', 'p2'), true, 'release forgets the attempt');
SELECT results_eq($$SELECT state, attempt FROM once.key_acquire('pay', 'p2', '{"other": 1}')$$,
                  $$VALUES ('acquired', 1)$$, 'after a release the key is free, even for another request');

-- an expired lease is also taken over by once.run
UPDATE once.keys SET locked_until = now() - interval '1 second' WHERE key = 'p2';
SELECT results_eq($$SELECT replayed, response FROM once.run('pay', 'p2', '{"other": 1}', 'SELECT 9')$$,
                  $$VALUES (false, '9'::jsonb)$$, 'once.run takes over a key whose lease expired');

-- expiry: an expired key is as good as absent
SELECT once.run('exp', 'e1', '{"v": 1}', 'SELECT 1');
UPDATE once.keys SET expires_at = now() - interval '1 second' WHERE key = 'e1';
SELECT results_eq($$SELECT replayed, response FROM once.run('exp', 'e1', '{"v": 2}', 'SELECT 2')$$,
                  $$VALUES (false, '2'::jsonb)$$, 'an expired key runs again, even with another request');
SELECT is((SELECT expires_at > now() FROM once.keys WHERE key = 'e1'), true, 'and gets a new expiry');
SELECT once.run('exp', 'e2', '{}', 'SELECT 1', '1 hour');
SELECT is((SELECT expires_at - created_at FROM once.keys WHERE key = 'e2'), interval '1 hour', 'ttl sets the expiry');
UPDATE once.keys SET expires_at = now() - interval '1 second' WHERE key = 'e2';
SELECT is((SELECT state FROM once.key_acquire('exp', 'e2', '{"x": 1}')), 'acquired', 'key_acquire treats an expired key as absent');
SELECT throws_ok($$SELECT once.key_checkpoint('exp', 'nope', 'x')$$, 'ON104', NULL, 'checkpoint of an absent key: ON104');

-- purge deletes expired keys only, in bounded batches
INSERT INTO once.keys (scope, key, fingerprint, state, expires_at, owner)
SELECT 'purge', 'old' || i, '\x00', 'done', now() - interval '1 day', current_user::regrole FROM generate_series(1, 25) i;
SELECT is(once.purge(10), 10::bigint, 'purge stops at max_rows');
SELECT is(once.purge(100), 15::bigint, 'the next call takes the rest');
SELECT is(once.purge(100), 0::bigint, 'nothing expired is left');
SELECT is((SELECT count(*) FROM once.keys WHERE key = 'p1'), 1::bigint, 'live keys survive purge');
SELECT throws_ok($$SELECT once.purge(0)$$, '22023', NULL, 'purge(0) is refused');

-- bad input
SELECT throws_ok($$SELECT * FROM once.key_acquire('pay', '', '{}')$$, 'ON101', NULL, 'empty key: ON101');
SELECT throws_ok($$SELECT * FROM once.key_acquire('pay', 'k', '{}', '-1 minute')$$, '22023', 'lease must be positive', 'negative lease: 22023');
SELECT throws_ok($$SELECT once.key_complete('pay', 'p2', '{}', 99)$$, '22023', NULL, 'status outside 100..599: 22023');
SELECT throws_ok($$SELECT once.key_checkpoint('pay', 'p2', NULL)$$, '22023', NULL, 'NULL recovery point: 22023');

SELECT * FROM finish();
ROLLBACK;
