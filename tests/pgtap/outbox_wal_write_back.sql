-- once.wal_write_back: once-relay gives back a message of the WAL transport's
-- stream that its sink refused. It becomes an outbox row as if claimed `attempts` times and
-- nacked: due again after the topic's backoff, or dead when refused for good or when the
-- topic's attempts are used up (once.nack's decision). Idempotent by id; only once_relay may
-- call it; bad arguments are refused as once.send refuses them, and write nothing. Keyed
-- write-backs (fenced) are checked in tests/integration/outbox_wal_keyed.sql.
BEGIN;
SELECT plan(34);

CREATE ROLE wb_relay;
GRANT once_relay TO wb_relay;
CREATE ROLE wb_producer;
GRANT once_producer TO wb_producer;
SELECT once.topic_policy('wb.limited', 3, '1 second', '1 minute');

-- wb(n, topic, attempts, dead): write back message n of the test, as the relay.
CREATE FUNCTION pg_temp.wb_id(n int) RETURNS uuid LANGUAGE sql
AS $$ SELECT ('0190b2c4-0000-7000-8000-' || lpad(n::text, 12, '0'))::uuid $$;
GRANT EXECUTE ON FUNCTION pg_temp.wb_id(int) TO PUBLIC;
CREATE FUNCTION pg_temp.row_of(n int) RETURNS text LANGUAGE sql
AS $$ SELECT ROW(o.attempt, o.last_error, o.dead_at IS NOT NULL, o.relay, o.key, o.key_seq)::text
        FROM once.outbox o WHERE o.id = pg_temp.wb_id(n) $$;

SET ROLE wb_relay;
SELECT is(once.wal_write_back(ROW(pg_temp.wb_id(1), 'wb.retry', NULL, '{"n": 1}', '{"h": "v"}',
                              '2026-11-26 10:00:00+00', 1, 'HTTP 503', false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message),
          true, 'a message the sink could not take is written back (true: inserted)');
SELECT is(once.wal_write_back(ROW(pg_temp.wb_id(2), 'wb.refused', NULL, '{"n": 2}', NULL,
                              '2026-11-26 10:00:01+00', 2, 'HTTP 400: bad field', true, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message),
          true, 'a message the sink refused for good is written back');
SELECT is(once.wal_write_back(ROW(pg_temp.wb_id(3), 'wb.limited', NULL, '{"n": 3}', NULL,
                              '2026-11-26 10:00:02+00', 3, 'timeout', false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message),
          true, 'a message that used its topic''s attempts is written back');
SELECT is(once.wal_write_back(ROW(pg_temp.wb_id(4), 'wb.limited', NULL, '{"n": 4}', NULL,
                              '2026-11-26 10:00:03+00', 2, 'timeout', false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message),
          true, 'a message with attempts left under its topic''s policy is written back');
SELECT is(once.wal_write_back(ROW(pg_temp.wb_id(5), 'wb.behind', NULL, '{"n": 5}', NULL,
                              '2026-11-26 10:00:04+00', 0, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message),
          true, 'a message never offered to the sink (0 attempts: behind its key) is written back');
RESET ROLE;
SELECT ok((SELECT attempt = 0 AND visible_at <= now() AND dead_at IS NULL AND stream_fence IS NULL
             FROM once.outbox WHERE id = pg_temp.wb_id(5)),
          '... due at once, no attempt counted; without a key it is not fenced');

-- Retry: due after the policy's backoff (first window 1 s by default, full jitter), with a
-- claim position, the attempts counted and the error kept; the stream's fields unchanged.
SELECT is(pg_temp.row_of(1), '(1,"HTTP 503",f,,,)',
          'retry: attempt = attempts, last_error = error, not dead, no lease, no key');
SELECT ok((SELECT visible_at >= now() AND visible_at <= now() + interval '1 second'
                  AND pos IS NOT NULL AND pos <> '00000000-0000-0000-0000-000000000000'
             FROM once.outbox WHERE id = pg_temp.wb_id(1)),
          '... due again within the default policy''s first backoff window, with a claim position');
SELECT is((SELECT ROW(topic, payload, headers, created_at)::text FROM once.outbox WHERE id = pg_temp.wb_id(1)),
          ROW('wb.retry', '{"n": 1}'::jsonb, '{"h": "v"}'::jsonb, '2026-11-26 10:00:00+00'::timestamptz)::text,
          '... with the topic, payload, headers and created_at the stream carried');
-- Dead: the dead-letter state (visible_at infinity, the dead position).
SELECT is(pg_temp.row_of(2), '(2,"HTTP 400: bad field",t,,,)', 'refused for good: a dead letter');
SELECT ok((SELECT visible_at = 'infinity' AND pos = '00000000-0000-0000-0000-000000000000' AND dead_at = now()
             FROM once.outbox WHERE id = pg_temp.wb_id(2)),
          '... in the dead-letter state nack gives (infinity, the dead position, dead_at now)');
SELECT is(pg_temp.row_of(3), '(3,timeout,t,,,)', 'attempts = the topic''s max_attempts: dead although not refused');
SELECT is(pg_temp.row_of(4), '(2,timeout,f,,,)', 'attempts below the topic''s max_attempts: a retry');
SELECT ok((SELECT visible_at > now() - interval '1 second' AND visible_at <= now() + interval '2 seconds'
             FROM once.outbox WHERE id = pg_temp.wb_id(4)),
          '... after the topic''s backoff (base 1 s, second attempt: at most 2 s)');

-- Idempotent: the same id again (a relay that died before confirming the slot) changes nothing.
SET ROLE wb_relay;
SELECT is(once.wal_write_back(ROW(pg_temp.wb_id(1), 'wb.retry', NULL, '{"n": 1}', '{"h": "v"}',
                              '2026-11-26 10:00:00+00', 5, 'HTTP 500', true, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message),
          false, 'writing back an id the outbox holds inserts nothing (false)');
RESET ROLE;
SELECT is(pg_temp.row_of(1), '(1,"HTTP 503",f,,,)', '... and leaves the first write-back as it was');

-- From the table, dead letters work as always: redrive makes the message ready again.
SELECT is(once.redrive(ARRAY[pg_temp.wb_id(2)]), 1, 'a written-back dead letter can be redriven');

-- Only once_relay: producers (and everyone else) cannot write messages into the outbox this way.
SET ROLE wb_producer;
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(9), 'wb.forged', NULL, '{}', NULL, now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '42501', NULL, 'a producer cannot call once.wal_write_back');
RESET ROLE;
SELECT ok(NOT has_function_privilege('public',
              'once.wal_write_back(once.wal_write_back_message)', 'EXECUTE'),
          'PUBLIC has no EXECUTE on once.wal_write_back');

-- Bad arguments: once.send's checks, and those of the write-back itself. Nothing is written.
SET ROLE wb_relay;
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(10), 'wb.keyed', 'k', '{}', NULL, now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'a keyed message needs its key_owner and key_seq', 'a key without its order is refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(10), 'wb.keyed', NULL, '{}', NULL, now(), 1, NULL, false,
                                             10::oid, gen_random_uuid(), NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'key_owner, key_seq and slot need a key', 'an order without a key is refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(NULL, 'wb.bad', NULL, '{}', NULL, now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 'ON211', NULL, 'a NULL id is refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(11), 'bad topic!', NULL, '{}', NULL, now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 'ON201', NULL, 'a malformed topic is refused as once.send refuses it');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(12), 'wb.bad', NULL, NULL, NULL, now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 'ON203', 'payload must not be NULL', 'a NULL payload is refused as once.send refuses it');
SELECT throws_ok(format($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(13), 'wb.bad', NULL, %L, NULL, now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                        jsonb_build_object('big', repeat('x', 1100000))),
                 'ON202', NULL, 'a payload over once.max_payload_bytes is refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(14), 'wb.bad', NULL, '{}', '[1]', now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 'ON204', NULL, 'headers that are not an object are refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(15), 'wb.bad', NULL, '{}', NULL, now(), -1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'attempts must not be negative, not -1', 'negative attempts are refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(15), 'wb.bad', NULL, '{}', NULL, now(), 0, NULL, true, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'a message with no delivery attempt cannot be dead', '0 attempts and dead are refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(16), 'wb.bad', NULL, '{}', NULL, NULL, 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'created_at must not be NULL', 'a NULL created_at is refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(17), 'wb.bad', NULL, '{}', NULL, now(), 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'dead must not be NULL', 'a NULL dead is refused');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wb_id(18), 'wb.bad', NULL, '{}', NULL, now(), 1, NULL, false, NULL, NULL, NULL,'-1 second', NULL)::once.wal_write_back_message)$$,
                 'ON209', NULL, 'a negative retry_after is refused, as once.nack refuses it');
-- The sink's Retry-After: due then, not after the topic's backoff (at most 1 s here).
SELECT ok(once.wal_write_back(ROW(pg_temp.wb_id(19), 'wb.retry_after', NULL, '{}', NULL, now(), 1, 'HTTP 429', false, NULL, NULL, NULL,'1 hour', NULL)::once.wal_write_back_message), 'a retry with the sink''s retry_after is written back');
RESET ROLE;
SELECT ok((SELECT visible_at >= now() + interval '59 minutes' AND visible_at <= now() + interval '61 minutes'
                  AND dead_at IS NULL AND attempt = 1
             FROM once.outbox WHERE id = pg_temp.wb_id(19)),
          '... due after retry_after, not the topic''s backoff');
SELECT is((SELECT count(*) FROM once.outbox WHERE topic IN ('wb.bad', 'wb.keyed', 'bad topic!', 'wb.forged')), 0::bigint,
          'no refused call wrote a row');

SELECT * FROM finish();
ROLLBACK;
