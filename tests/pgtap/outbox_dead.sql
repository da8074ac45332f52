-- once.dead: a relay gives a message back as undeliverable for good (HTTP 4xx, inbox poison).
BEGIN;
SELECT plan(9);

SELECT once.topic_policy('order.created', max_attempts => 25);
SELECT once.send('order.created', '{"n": 1}') AS dead_id \gset
SELECT is((SELECT count(*) FROM once.claim('relay-a', 10)), 1::bigint, 'relay-a claims the message');

SELECT is(once.dead('relay-b', :'dead_id', 'HTTP 400: bad order'), 'stale',
          'a relay that does not hold the lease changes nothing');
SELECT is((SELECT count(*) FROM once.dead_letters), 0::bigint, 'so nothing is dead yet');

SELECT is(once.dead('relay-a', :'dead_id', 'HTTP 400: bad order'), 'dead',
          'the lease holder dead-letters it at once, with 24 attempts left');
SELECT results_eq($$SELECT attempt, last_error FROM once.dead_letters$$,
                  $$VALUES (1, 'HTTP 400: bad order')$$, 'it is a dead letter with its reason');
SELECT is((SELECT count(*) FROM once.claim('relay-a', 10)), 0::bigint, 'a dead message is not claimed again');

SELECT throws_ok($$SELECT once.dead('relay-a', '0190f1e2-7a3b-7c4d-8e5f-0000000000ff', 'x')$$, 'ON207', NULL,
                 'an unknown id is ON207');
SELECT throws_ok(format($$SELECT once.dead('', %L, 'x')$$, :'dead_id'), 'ON208', NULL,
                 'an empty relay name is ON208');

SELECT once.redrive(ARRAY[:'dead_id'::uuid]);
SELECT is((SELECT count(*) FROM once.claim('relay-a', 10)), 1::bigint, 'redrive brings it back');

SELECT * FROM finish();
ROLLBACK;
