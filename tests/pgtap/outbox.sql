-- Outbox: send, claim, ack, nack, extend, per-key order, leases, retries, dead letters,
-- redrive, statistics, history, privileges and bad input.
-- Time-dependent rules are tested by moving stored times back, never by waiting.
BEGIN;
SELECT plan(115);

-- A message becomes due now (as if its delay or lease had passed).
CREATE FUNCTION pg_temp.make_due(message uuid) RETURNS void LANGUAGE sql AS $$
    UPDATE once.outbox SET visible_at = now() - interval '1 second', pos = once._outbox_position(now())
     WHERE id = message
$$;
CREATE FUNCTION pg_temp.claim_ids(relay text, batch int DEFAULT 100, topics text[] DEFAULT NULL)
RETURNS uuid[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM once.claim(relay, batch, '30 seconds', topics)
$$;

-- ------------------------------------------------------------------ send
SELECT once.send('t.a', '{"n": 1}') AS a1 \gset
SELECT once.send('t.a', '{"n": 2}') AS a2 \gset
SELECT is(substr(:'a1', 15, 1), '7', 'send returns a version 7 uuid');
SELECT ok(:'a2'::uuid > :'a1'::uuid, 'ids are time-ordered');
SELECT is((SELECT payload FROM once.outbox WHERE id = :'a1'), '{"n": 1}'::jsonb, 'the payload is stored');

SAVEPOINT before_rollback;
SELECT once.send('t.rolled', '{}') AS rolled \gset
ROLLBACK TO SAVEPOINT before_rollback;
SELECT is((SELECT count(*) FROM once.outbox WHERE topic = 't.rolled'), 0::bigint,
    'a rolled-back send leaves nothing');

SELECT once.send('t.x', '{"v": 1}', message_id => '11111111-1111-4111-8111-111111111111') AS explicit_id \gset
SELECT ok(:'explicit_id'::uuid IS NOT NULL, 'an explicit message_id gives the message an id (derived from it and the role)');
SELECT is(once.send('t.x', '{"v": 1}', message_id => '11111111-1111-4111-8111-111111111111'),
    :'explicit_id'::uuid, 'a repeated message_id returns the same id');
-- (with another payload it is ON212, from another role another id: tests/pgtap/outbox_message_id.sql)
SELECT is((SELECT count(*) FROM once.outbox WHERE id = :'explicit_id'), 1::bigint,
    'a repeated message_id writes no second message');
SELECT is((SELECT payload FROM once.outbox WHERE id = :'explicit_id'), '{"v": 1}'::jsonb,
    'a repeated message_id keeps the first payload');

SELECT once.send('t.h', '{}', headers => '{"trace": "abc"}') AS h0 \gset
SELECT is((SELECT headers FROM once.outbox WHERE id = :'h0'), '{"trace": "abc"}'::jsonb, 'headers are stored');

-- send_many
SELECT is((SELECT count(*) FROM once.send_many('t.many', ARRAY['{"i":1}', '{"i":2}', '{"i":3}']::jsonb[])),
    3::bigint, 'send_many returns one id per payload');
SELECT is((SELECT array_agg(payload->>'i' ORDER BY id) FROM once.outbox WHERE topic = 't.many'),
    ARRAY['1', '2', '3'], 'send_many ids follow array order');
SELECT is((SELECT count(*) FROM once.send_many('t.many', '{}'::jsonb[])), 0::bigint,
    'send_many with an empty array sends nothing');

-- clear the table for the relay tests
DELETE FROM once.outbox;

-- ------------------------------------------------------------------ claim / ack / lease
SELECT once.send('t.c', '{"n": 1}') AS c1 \gset
SELECT once.send('t.c', '{"n": 2}') AS c2 \gset
SELECT once.send('t.c', '{"n": 3}') AS c3 \gset
SELECT is((SELECT array_agg(id) FROM once.claim('r1', 2)), ARRAY[:'c1', :'c2']::uuid[],
    'claim returns the oldest messages first, at most batch');
SELECT is((SELECT attempt FROM once.outbox WHERE id = :'c1'), 1, 'a claim counts an attempt');
SELECT is(pg_temp.claim_ids('r2'), ARRAY[:'c3']::uuid[], 'leased messages are invisible to another relay');
SELECT is(pg_temp.claim_ids('r2'), '{}'::uuid[], 'nothing left to claim');

SELECT is(once.ack('r2', ARRAY[:'c1']::uuid[]), 0, 'an ack by a relay that does not hold the message acks nothing');
SELECT is((SELECT count(*) FROM once.outbox WHERE id = :'c1'), 1::bigint, '... and leaves it in place');
SELECT is(once.ack('r1', ARRAY[:'c1', :'c2']::uuid[]), 2, 'ack returns how many were acknowledged');
SELECT is((SELECT count(*) FROM once.outbox WHERE id IN (:'c1', :'c2')), 0::bigint, 'acked messages are deleted');
SELECT is(once.ack('r1', ARRAY[:'c1']::uuid[]), 0, 'a repeated ack acks nothing');

-- lease expiry: r2 holds c3; its lease runs out and r3 takes over
SELECT pg_temp.make_due(:'c3');
SELECT is((SELECT attempt FROM once.claim('r3')), 2, 'an expired lease is claimed again with attempt + 1');
SELECT is(once.ack('r2', ARRAY[:'c3']::uuid[]), 0, 'the stale relay''s ack changes nothing');
SELECT is(once.nack('r2', :'c3', 'late'), 'stale', 'the stale relay''s nack changes nothing and says so');
SELECT is((SELECT relay FROM once.outbox WHERE id = :'c3'), 'r3', 'the new holder keeps the message');
SELECT is(once.extend('r2', ARRAY[:'c3']::uuid[], '1 minute'), 0, 'a stale relay cannot extend');
SELECT is(once.extend('r3', ARRAY[:'c3']::uuid[], '10 minutes'), 1, 'the holder extends its lease');
SELECT ok((SELECT visible_at BETWEEN now() + interval '9 minutes' AND now() + interval '11 minutes'
             FROM once.outbox WHERE id = :'c3'), 'extend moves the lease end to now() + lease');
SELECT is(once.ack('r3', ARRAY[:'c3']::uuid[]), 1, 'the holder acks');

-- a relay whose lease expired but was not taken over may still ack
SELECT once.send('t.c', '{"n": 4}') AS c4 \gset
SELECT pg_temp.claim_ids('r1');
UPDATE once.outbox SET visible_at = now() - interval '1 second' WHERE id = :'c4';
SELECT is(once.ack('r1', ARRAY[:'c4']::uuid[]), 1, 'an expired but not taken over lease can still be acked');

-- deliver_at
SELECT once.send('t.d', '{}', deliver_at => now() + interval '1 hour') AS d1 \gset
SELECT is(pg_temp.claim_ids('r1'), '{}'::uuid[], 'a message with a future deliver_at is not claimed');
SELECT is((SELECT delayed FROM once.outbox_stats WHERE topic = 't.d'), 1::bigint, 'it counts as delayed');
SELECT pg_temp.make_due(:'d1');
SELECT is(pg_temp.claim_ids('r1'), ARRAY[:'d1']::uuid[], 'it is claimed once due');
SELECT once.ack('r1', ARRAY[:'d1']::uuid[]);
SELECT once.send('t.d', '{}', deliver_at => now() - interval '1 hour') AS d2 \gset
SELECT is(pg_temp.claim_ids('r1'), ARRAY[:'d2']::uuid[], 'a past deliver_at means now');
SELECT once.ack('r1', ARRAY[:'d2']::uuid[]);

-- ------------------------------------------------------------------ per-key order
SELECT once.send('t.k', '{"n": 1}', 'k1') AS k1a \gset
SELECT once.send('t.k', '{"n": 1}', 'k2') AS k2a \gset
SELECT once.send('t.k', '{"n": 2}', 'k1') AS k1b \gset
SELECT once.send('t.k', '{}') AS kn1 \gset
SELECT once.send('t.k', '{}') AS kn2 \gset
SELECT is(pg_temp.claim_ids('r1'), ARRAY[:'k1a', :'k2a', :'kn1', :'kn2']::uuid[],
    'one message per key per claim; keyless messages are all claimed');
SELECT is(pg_temp.claim_ids('r2'), '{}'::uuid[], 'a key''s next message waits while the earlier one is in flight');
SELECT is(once.nack('r1', :'k1a', 'sink down'), 'retry', 'nack schedules a retry');
SELECT pg_temp.make_due(:'k1b');
SELECT is(pg_temp.claim_ids('r2'), '{}'::uuid[], 'a key''s next message waits while the earlier one waits for a retry');
SELECT pg_temp.make_due(:'k1a');
SELECT is(pg_temp.claim_ids('r2'), ARRAY[:'k1a']::uuid[], 'the retried message comes first');
SELECT once.ack('r2', ARRAY[:'k1a']::uuid[]);
SELECT is(pg_temp.claim_ids('r2'), ARRAY[:'k1b']::uuid[], 'after the ack the next message of the key is claimed');
SELECT once.ack('r2', ARRAY[:'k1b']::uuid[]);
SELECT once.ack('r1', ARRAY[:'k2a', :'kn1', :'kn2']::uuid[]);

-- keys in send_many keep array order
SELECT array_agg(m.id) AS many FROM once.send_many('t.k', ARRAY['{"i":1}', '{"i":2}', '{"i":3}']::jsonb[],
    ARRAY['m', 'm', NULL]) AS m(id) \gset
SELECT is((SELECT array_agg(payload->>'i' ORDER BY payload->>'i') FROM once.claim('r1')), ARRAY['1', '3'],
    'send_many: the first message of a key and keyless ones are claimable');
SELECT once.ack('r1', (SELECT array_agg(id) FROM once.outbox WHERE relay = 'r1'));
SELECT is((SELECT array_agg(payload->>'i') FROM once.claim('r1')), ARRAY['2'],
    'send_many: the second message of the key follows');
SELECT once.ack('r1', (SELECT array_agg(id) FROM once.outbox WHERE relay = 'r1'));

-- ------------------------------------------------------------------ retries and backoff
SELECT once.send('t.r', '{}') AS r1 \gset
SELECT pg_temp.claim_ids('r1');
SELECT is(once.nack('r1', :'r1', 'timeout'), 'retry', 'nack without retry_after retries');
SELECT ok((SELECT visible_at BETWEEN now() AND now() + interval '1 second' FROM once.outbox WHERE id = :'r1'),
    'the first retry is within the 1 s backoff window');
SELECT is((SELECT relay FROM once.outbox WHERE id = :'r1'), NULL, 'a nacked message is no longer held');
SELECT is((SELECT last_error FROM once.outbox WHERE id = :'r1'), 'timeout', 'the error is recorded');
SELECT is(once.ack('r1', ARRAY[:'r1']::uuid[]), 0, 'a nacked message cannot be acked by its former holder');
UPDATE once.outbox SET attempt = 5, visible_at = now() - interval '1 second', pos = once._outbox_position(now())
 WHERE id = :'r1';
SELECT pg_temp.claim_ids('r1');
SELECT is((SELECT attempt FROM once.outbox WHERE id = :'r1'), 6, 'claimed for the 6th time');
SELECT once.nack('r1', :'r1', 'timeout');
SELECT ok((SELECT visible_at BETWEEN now() AND now() + interval '32 seconds' FROM once.outbox WHERE id = :'r1'),
    'the 6th retry is within the 32 s window');
SELECT pg_temp.make_due(:'r1');
SELECT pg_temp.claim_ids('r1');
SELECT is(once.nack('r1', :'r1', 'rate limited', interval '10 minutes'), 'retry', 'nack with retry_after');
SELECT ok((SELECT visible_at = now() + interval '10 minutes' FROM once.outbox WHERE id = :'r1'),
    'retry_after overrides the backoff');
SELECT is(pg_temp.claim_ids('r2'), '{}'::uuid[], 'a message waiting for its retry is not claimed');
SELECT once.topic_policy('t.b', max_attempts => 3, backoff_base => '1 minute', backoff_max => '2 minutes');
SELECT once.send('t.b', '{}') AS b1 \gset
SELECT pg_temp.claim_ids('r1');
SELECT once.nack('r1', :'b1', 'x');
SELECT ok((SELECT visible_at BETWEEN now() AND now() + interval '1 minute' FROM once.outbox WHERE id = :'b1'),
    'a topic policy sets the backoff window');
DELETE FROM once.outbox WHERE topic IN ('t.r', 't.b');

-- ------------------------------------------------------------------ dead letters
SELECT once.topic_policy('t.dead', max_attempts => 2);
SELECT once.send('t.dead', '{"p": 1}', 'kd') AS dd1 \gset
SELECT once.send('t.dead', '{"p": 2}', 'kd') AS dd2 \gset
SELECT pg_temp.claim_ids('r1');
SELECT is(once.nack('r1', :'dd1', 'boom 1'), 'retry', 'attempt 1 of 2 fails: retry');
SELECT pg_temp.make_due(:'dd1');
SELECT pg_temp.claim_ids('r1');
SELECT is(once.nack('r1', :'dd1', 'boom 2'), 'dead', 'attempt 2 of 2 fails: dead');
SELECT is((SELECT attempt || ':' || last_error FROM once.dead_letters WHERE id = :'dd1'), '2:boom 2',
    'dead_letters shows attempts and the last error');
SELECT is(pg_temp.claim_ids('r1'), '{}'::uuid[], 'a dead keyed message holds back its key');
SELECT is((SELECT key || ':' || waiting FROM once.blocked_keys), 'kd:1', 'blocked_keys names the key and what waits');
SELECT is((SELECT dead FROM once.outbox_stats WHERE topic = 't.dead'), 1::bigint, 'outbox_stats counts dead letters');
SELECT is(once.nack('r1', :'dd1', 'again'), 'stale', 'a dead message cannot be nacked again');
SELECT is(once.redrive(ARRAY[:'dd1']::uuid[]), 1, 'redrive brings a dead letter back');
SELECT is((SELECT attempt FROM once.claim('r1')), 1, 'a redriven message starts again at attempt 1');
SELECT once.ack('r1', ARRAY[:'dd1']::uuid[]);
SELECT is(pg_temp.claim_ids('r1'), '{}'::uuid[],
    'the next message waits (since the first one''s retry) until the ack commits');
SELECT pg_temp.make_due(:'dd2');  -- what that commit does (isolation spec outbox_waiting)
SELECT is(pg_temp.claim_ids('r1'), ARRAY[:'dd2']::uuid[], 'then the key moves on');
SELECT once.nack('r1', :'dd2', 'x');
SELECT pg_temp.make_due(:'dd2');
SELECT pg_temp.claim_ids('r1');
SELECT once.nack('r1', :'dd2', 'x');
SELECT is(once.discard(ARRAY[:'dd2']::uuid[]), 1, 'discard deletes a dead letter');
SELECT is(once.redrive(ARRAY[:'dd2']::uuid[]), 0, 'redrive of something that is not a dead letter does nothing');

-- a relay that keeps crashing: the lease of the last attempt expires -> dead at the next claim
SELECT once.send('t.dead', '{"p": 3}') AS dd3 \gset
UPDATE once.outbox SET attempt = 2 WHERE id = :'dd3';
SELECT is(pg_temp.claim_ids('r1'), '{}'::uuid[], 'a message whose attempts are used up is not claimed again');
SELECT ok((SELECT last_error LIKE '%expired%' FROM once.dead_letters WHERE id = :'dd3'), '... it is dead, saying why');
DELETE FROM once.outbox;

-- ------------------------------------------------------------------ topic patterns
SELECT once.send('order.created', '{}') AS p1 \gset
SELECT once.send('order.created.v2', '{}') AS p2 \gset
SELECT once.send('invoice.paid', '{}') AS p3 \gset
SELECT is(pg_temp.claim_ids('r1', 100, '{order.*}'), ARRAY[:'p1']::uuid[], '''order.*'' matches one token');
SELECT is(pg_temp.claim_ids('r1', 100, '{order.>}'), ARRAY[:'p2']::uuid[], '''order.>'' matches the rest');
SELECT is(pg_temp.claim_ids('r1', 100, '{nothing.*, invoice.paid}'), ARRAY[:'p3']::uuid[], 'several patterns');
DELETE FROM once.outbox;

-- ------------------------------------------------------------------ statistics and history
SELECT once.send('t.s', '{}');
SELECT once.send('t.s', '{}', deliver_at => now() + interval '1 day');
SELECT once.send('t.s', '{}') AS s3 \gset
SELECT results_eq($$SELECT ready, delayed, in_flight, dead FROM once.outbox_stats WHERE topic = 't.s'$$,
    $$VALUES (2::bigint, 1::bigint, 0::bigint, 0::bigint)$$, 'outbox_stats: ready and delayed');
SELECT pg_temp.claim_ids('r1', 1);
SELECT results_eq($$SELECT ready, delayed, in_flight FROM once.outbox_stats WHERE topic = 't.s'$$,
    $$VALUES (1::bigint, 1::bigint, 1::bigint)$$, 'outbox_stats: in flight');
DELETE FROM once.outbox;

SELECT once.topic_policy('t.hist', retention => '7 days');
SELECT once.send('t.hist', '{"kept": true}') AS h1 \gset
SELECT once.send('t.nohist', '{}') AS h2 \gset
SELECT once.ack('r1', pg_temp.claim_ids('r1'));
SELECT is((SELECT count(*) FROM once.outbox_delivered WHERE id = :'h1'), 1::bigint,
    'a topic with retention keeps delivered messages');
SELECT is((SELECT count(*) FROM once.outbox_delivered WHERE id = :'h2'), 0::bigint, 'others keep none');
UPDATE once.outbox_delivered SET expires_at = now() - interval '1 second';
SELECT is(once.purge(), 1::bigint, 'once.purge removes expired history');

-- ------------------------------------------------------------------ bad input
SELECT throws_ok($$SELECT once.send(NULL, '{}')$$, 'ON201', NULL, 'NULL topic');
SELECT throws_ok($$SELECT once.send('', '{}')$$, 'ON201', NULL, 'empty topic');
SELECT throws_ok($$SELECT once.send(repeat('a', 256), '{}')$$, 'ON201', NULL, 'topic over 255 bytes');
SELECT throws_ok($$SELECT once.send('a b', '{}')$$, 'ON201', NULL, 'topic with a space');
SELECT throws_ok($$SELECT once.send('t', NULL)$$, 'ON203', NULL, 'NULL payload');
SELECT throws_ok($$SELECT once.send('t', 'null')$$, 'ON203', NULL, 'JSON null payload');
SET LOCAL once.max_payload_bytes = 100;
SELECT throws_ok($$SELECT once.send('t', jsonb_build_object('x', repeat('y', 200)))$$, 'ON202', NULL,
    'payload over once.max_payload_bytes');
RESET once.max_payload_bytes;
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '[1]')$$, 'ON204', NULL, 'headers that are an array');
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '"x"')$$, 'ON204', NULL, 'headers that are a scalar');
-- Headers the relay would put on the wire as its own or the transport's.
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '{"Host": "internal-admin.local"}')$$, 'ON214',
    'header "Host" may not be sent with a message', 'a Host header is refused (ON214)');
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '{"content-length": "2"}')$$, 'ON214', NULL,
    'Content-Length is refused whatever its case');
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '{"Idempotency-Key": "k"}')$$, 'ON214', NULL,
    'a second Idempotency-Key is refused');
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '{"X-Once-Topic": "billing.refund"}')$$, 'ON214', NULL,
    'the relay''s own X-Once-* headers are refused');
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '{"Nats-Expected-Last-Sequence": "1"}')$$, 'ON214', NULL,
    'NATS headers are refused');
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '{"x-note": "a\r\nHost: evil"}')$$, 'ON214', NULL,
    'a value with CR/LF is refused');
SELECT throws_ok($$SELECT once.send('t', '{}', headers => '{"bad name": "x"}')$$, 'ON214', NULL,
    'a name that is not an HTTP token is refused');
SELECT throws_ok($$SELECT once.send('t', '{}', '')$$, 'ON205', NULL, 'empty key');
SELECT throws_ok($$SELECT once.send('t', '{}', deliver_at => 'infinity')$$, 'ON209', NULL, 'infinite deliver_at');
SELECT throws_ok($$SELECT once.send_many('t', ARRAY['{}', NULL]::jsonb[])$$, 'ON203', NULL, 'send_many: NULL element');
SELECT throws_ok($$SELECT once.send_many('t', ARRAY['{}']::jsonb[], ARRAY['a', 'b'])$$, 'ON206', NULL,
    'send_many: keys of another length');
SELECT throws_ok($$SELECT * FROM once.claim('r', 0)$$, 'ON206', NULL, 'batch 0');
SELECT throws_ok($$SELECT * FROM once.claim('r', 10001)$$, 'ON206', NULL, 'batch over the maximum');
SELECT throws_ok($$SELECT * FROM once.claim(NULL)$$, 'ON208', NULL, 'NULL relay');
SELECT throws_ok($$SELECT * FROM once.claim('r', 1, '0 seconds')$$, 'ON209', NULL, 'zero lease');
SELECT throws_ok($$SELECT * FROM once.claim('r', 1, '30 seconds', '{"a.>.b"}')$$, 'ON301', NULL, 'bad topic pattern');
SELECT throws_ok($$SELECT once.ack('r', NULL)$$, 'ON211', NULL, 'NULL ids');
SELECT is(once.ack('r', '{}'), 0, 'acking an empty batch acks nothing (no error: normal in a relay loop)');
SELECT throws_ok($$SELECT once.ack('r', ARRAY[NULL]::uuid[])$$, 'ON211', NULL, 'NULL in ids');
SELECT throws_ok($$SELECT once.nack('r', gen_random_uuid(), 'x')$$, 'ON207', NULL, 'nack of an unknown id');
SELECT throws_ok($$SELECT once.nack('r', gen_random_uuid(), 'x', '-1 second')$$, 'ON209', NULL, 'negative retry_after');
SELECT throws_ok($$SELECT once.topic_policy('t', max_attempts => 0)$$, 'ON210', NULL, 'max_attempts 0');
SELECT throws_ok($$SELECT once.topic_policy('t', backoff_base => '1 hour', backoff_max => '1 minute')$$, 'ON210',
    NULL, 'backoff_max below backoff_base');
SELECT is((SELECT count(*) FROM once.outbox), 0::bigint, 'bad input wrote nothing');
SELECT lives_ok($$SELECT once.send('t.headers', '{}', headers => '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-tenant": 7}')$$,
    'traceparent and the application''s own headers pass');

-- ------------------------------------------------------------------ privileges
CREATE ROLE outbox_test_app LOGIN;
GRANT once_producer TO outbox_test_app;
SET LOCAL ROLE outbox_test_app;
SELECT lives_ok($$SELECT once.send('t.priv', '{}')$$, 'once_producer may send');
SELECT throws_ok($$SELECT * FROM once.claim('r')$$, '42501', NULL, 'once_producer may not claim');
SELECT throws_ok($$SELECT * FROM once.outbox$$, '42501', NULL, 'the outbox table is not readable');
RESET ROLE;

-- The default policy has one home (the library's RetryPolicy): a topic_policy without
-- max_attempts / backoff takes it, as do topics without a policy.
SELECT once.topic_policy('t.defaults', retention => '1 day');
SELECT is((SELECT (max_attempts, backoff_base, backoff_max)::text FROM once.outbox_topic_policies WHERE topic = 't.defaults'),
          '(25,00:00:01,01:00:00)', 'topic_policy without attempts or backoff stores the default policy (25, 1 s, 1 h)');
SELECT is((SELECT (d.max_attempts, d.backoff_base, d.backoff_max)::text FROM once._outbox_default_policy() d),
          '(25,00:00:01,01:00:00)', '... which is once._outbox_default_policy()');
SELECT * FROM finish();
ROLLBACK;
