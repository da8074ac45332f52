-- once.relay_topic_gauges() and once.relay_saga_gauges(), the outbox gauges of once-relay's
-- /metrics: per topic ready, delayed, in flight, blocked (behind the key's head)
-- and dead, the oldest ready age; sagas per status; callable by once_relay, not by others.
BEGIN;
SELECT plan(8);

SELECT once.send('g.a', '{"n": 1}') FROM generate_series(1, 3);
SELECT once.send('g.a', '{"n": 4}', deliver_at => now() + interval '1 day');
CREATE TEMP TABLE head AS SELECT once.send('g.k', '{"n": 1}', key => 'k1') AS id;
SELECT once.send('g.k', '{"n": 2}', key => 'k1');
SELECT once.send('g.k', '{"n": 3}', key => 'k1');
SELECT once.send('g.z', '{"n": 1}');
SELECT is((SELECT count(*) FROM once.claim('relay-a', 10, interval '1 minute', ARRAY['g.k', 'g.z'])), 2::bigint,
          'a relay claims the head of k1 and g.z''s message');
SELECT results_eq($$SELECT topic, ready, delayed, in_flight, blocked, dead, capped FROM once.relay_topic_gauges()$$,
                  $$VALUES ('g.a', 3::bigint, 1::bigint, 0::bigint, 0::bigint, 0::bigint, false),
                           ('g.k', 2::bigint, 0::bigint, 1::bigint, 0::bigint, 0::bigint, false),
                           ('g.z', 0::bigint, 0::bigint, 1::bigint, 0::bigint, 0::bigint, false)$$,
                  'per topic: ready, delayed, in flight (messages sent behind a ready head do not wait: ready)');
SELECT is(once.dead('relay-a', (SELECT id FROM head), 'HTTP 400'), 'dead', 'k1''s head is dead-lettered');
SELECT results_eq($$SELECT blocked, dead, in_flight FROM once.relay_topic_gauges() WHERE topic = 'g.k'$$,
                  $$VALUES (2::bigint, 1::bigint, 0::bigint)$$, 'the dead head counts as dead, the two behind it now wait: blocked');
SELECT ok((SELECT bool_and(oldest_ready_age >= 0) AND bool_and((oldest_ready_age IS NULL) = (ready = 0))
             FROM once.relay_topic_gauges()), 'the oldest ready age is there exactly when something is ready');
SELECT results_eq($$SELECT status, sagas, capped FROM once.relay_saga_gauges() ORDER BY status$$,
                  $$VALUES ('compensated', 0::bigint, false), ('compensating', 0::bigint, false), ('completed', 0::bigint, false),
                           ('failed', 0::bigint, false), ('running', 0::bigint, false)$$, 'every saga status, counted');
SELECT ok(has_function_privilege('once_relay', 'once.relay_topic_gauges()', 'EXECUTE')
          AND has_function_privilege('once_relay', 'once.relay_saga_gauges()', 'EXECUTE'), 'once_relay may read the gauges');
SELECT ok(NOT has_function_privilege('once_producer', 'once.relay_topic_gauges()', 'EXECUTE')
          AND NOT has_function_privilege('once_consumer', 'once.relay_saga_gauges()', 'EXECUTE'), 'producers and consumers may not');

SELECT * FROM finish();
ROLLBACK;
