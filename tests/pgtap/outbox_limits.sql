-- Outbox limits: empty batches, headers in the size limit, the
-- upper bound of deliver_at, and intervals too large for 64-bit arithmetic.
BEGIN;
SELECT plan(17);

-- ------------------------------------------------------------------ empty batches
SELECT is(once.ack('r', '{}'), 0, 'ack of an empty batch returns 0');
SELECT is(once.ack('r', ARRAY(SELECT id FROM once.claim('r', 10))), 0,
    'ack(claim()) on an empty outbox returns 0');
SELECT is(once.extend('r', '{}', '1 minute'), 0, 'extend of an empty batch returns 0');
SELECT throws_ok($$SELECT once.extend('r', '{}', '0 seconds')$$, 'ON209', NULL,
    'extend of an empty batch still checks the lease');

-- ------------------------------------------------------------------ headers count toward the size limit
SET LOCAL once.max_payload_bytes = 100;
SELECT throws_ok($$SELECT once.send('t', '{}', headers => jsonb_build_object('x', repeat('y', 200)))$$,
    'ON202', NULL, 'headers alone over once.max_payload_bytes');
SELECT throws_ok($$SELECT once.send('t', jsonb_build_object('p', repeat('y', 40)),
                                    headers => jsonb_build_object('h', repeat('y', 40)))$$,
    'ON202', 'payload and headers are too large', 'payload and headers together over once.max_payload_bytes');
SELECT lives_ok($$SELECT once.send('t', jsonb_build_object('p', repeat('y', 10)),
                                   headers => jsonb_build_object('h', repeat('y', 10)))$$,
    'payload and headers under the limit are accepted');
RESET once.max_payload_bytes;

-- ------------------------------------------------------------------ deliver_at bound (10 years)
SELECT lives_ok($$SELECT once.send('t.far', '{}', deliver_at => now() + interval '3653 days')$$,
    'deliver_at exactly 3653 days ahead is accepted');
SELECT throws_ok($$SELECT once.send('t.far', '{}', deliver_at => now() + interval '3653 days 1 second')$$,
    'ON209', 'deliver_at is too far in the future', 'deliver_at beyond 3653 days is refused');
SELECT throws_ok($$SELECT once.send('t.far', '{}', deliver_at => '10890-01-01')$$,
    'ON209', NULL, 'a deliver_at past the 48-bit millisecond position is refused (it used to wrap to 1970)');
SELECT ok((SELECT pos > once._outbox_position(now() + interval '3652 days') FROM once.outbox WHERE topic = 't.far'),
    'the accepted far deliver_at is positioned in the future');

-- ------------------------------------------------------------------ intervals that overflow 64-bit microseconds
SELECT throws_ok($$SELECT * FROM once.claim('r', 1, interval '3600000 months 9115544073769551616 microseconds')$$,
    'ON209', 'lease is out of range', 'a lease whose months overflow is refused (it used to wrap to a small lease)');
SELECT throws_ok($$SELECT once.nack('r', gen_random_uuid(), 'x', interval '3600000 months 9115544073769551616 microseconds')$$,
    'ON209', 'retry_after is out of range', 'an overflowing retry_after is refused');
SELECT throws_ok($$SELECT once.topic_policy('t', backoff_base => '1 second',
                                            backoff_max => interval '3600000 months 9115544073769551616 microseconds')$$,
    'ON210', 'backoff_max is out of range', 'an overflowing backoff_max is refused');

-- ------------------------------------------------------------------ the bound holds for what is applied
-- '1200 mon -35999 days' is one day with 30-day months, but now() + it is about 525 days:
-- the check uses the calendar arithmetic the SQL applies.
SELECT throws_ok($$SELECT * FROM once.claim('r', 1, interval '1200 mon -35999 days')$$,
    'ON209', 'lease is out of range', 'a lease that is one day with 30-day months but ~525 days applied is refused');
SELECT throws_ok($$SELECT * FROM once.extend('r', ARRAY[gen_random_uuid()], interval '1200 mon -35999 days')$$,
    'ON209', 'lease is out of range', 'extend checks the applied lease too');
SELECT throws_ok($$SELECT once.nack('r', gen_random_uuid(), 'x', interval '1200 mon -35700 days')$$,
    'ON209', 'retry_after is out of range', 'a retry_after of 300 days with 30-day months but ~824 days applied is refused');

SELECT * FROM finish();
ROLLBACK;
