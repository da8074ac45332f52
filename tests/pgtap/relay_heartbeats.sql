-- once.relay_heartbeat() and once.relay_heartbeats: a relay's beat is one row per (name, host),
-- its state_since kept while the state stays; bad beats are refused with ON208 / ON218 and
-- write nothing; only once_relay may beat, the console's roles may read (once.console_relay_heartbeats),
-- nobody else reads the table but once_admin; rows of relays gone for 7 days are removed.
BEGIN;
SELECT plan(16);

CREATE ROLE hb_relay LOGIN IN ROLE once_relay;
CREATE ROLE hb_viewer LOGIN IN ROLE once_console_viewer;
CREATE ROLE hb_producer LOGIN IN ROLE once_producer;

SET ROLE hb_relay;
SELECT lives_ok($$SELECT once.relay_heartbeat('r1', 'host-a', 4242, 'table', 'http://sink.example/hook', 'relaying',
                                              12.5, now() - interval '1 hour', '0.3.0', interval '10 seconds')$$,
                'once_relay beats');
SELECT throws_ok($$SELECT * FROM once.relay_heartbeats$$, '42501', NULL, 'once_relay cannot read the table directly');
SELECT throws_ok($$SELECT once.relay_heartbeat('', 'host-a', 1, 'table', 's', 'relaying', 0, now(), '0.3.0', interval '10 seconds')$$,
                 'ON208', NULL, 'an empty relay name is refused (ON208)');
SELECT throws_ok($$SELECT once.relay_heartbeat('r1', 'host-a', 1, 'table', 's', 'dancing', 0, now(), '0.3.0', interval '10 seconds')$$,
                 'ON218', NULL, 'an unknown state is refused (ON218)');
SELECT throws_ok($$SELECT once.relay_heartbeat('r1', 'host-a', 1, 'carrier pigeon', 's', 'relaying', 0, now(), '0.3.0', interval '10 seconds')$$,
                 'ON218', NULL, 'an unknown transport is refused (ON218)');
SELECT throws_ok($$SELECT once.relay_heartbeat('r1', 'host-a', 1, 'table', 's', 'relaying', 'NaN', now(), '0.3.0', interval '10 seconds')$$,
                 'ON218', NULL, 'a rate that is not a number is refused (ON218)');
SELECT throws_ok($$SELECT once.relay_heartbeat('r1', 'host-a', 1, 'table', 's', 'relaying', 0, now(), '0.3.0', interval '0 seconds')$$,
                 'ON218', NULL, 'an interval under 1 s is refused (ON218)');
RESET ROLE;

SELECT results_eq($$SELECT relay, host, pid, transport, sink, state, messages_per_s FROM once.relay_heartbeats$$,
                  $$VALUES ('r1', 'host-a', 4242, 'table', 'http://sink.example/hook', 'relaying', 12.5::double precision)$$,
                  'one row, as beaten; the refused beats wrote nothing');

-- The same relay beats again in the same state: one row, state_since kept; then its sink fails.
UPDATE once.relay_heartbeats SET state_since = now() - interval '5 minutes', last_beat = now() - interval '10 seconds';
SET ROLE hb_relay;
SELECT once.relay_heartbeat('r1', 'host-a', 4242, 'table', 'http://sink.example/hook', 'relaying', 3, now() - interval '1 hour',
                            '0.3.0', interval '10 seconds');
RESET ROLE;
SELECT results_eq($$SELECT count(*), bool_and(state_since = now() - interval '5 minutes'), bool_and(last_beat = now())
                      FROM once.relay_heartbeats$$,
                  $$VALUES (1::bigint, true, true)$$, 'a beat in the same state moves last_beat and keeps state_since');
SET ROLE hb_relay;
SELECT once.relay_heartbeat('r1', 'host-a', 4242, 'table', 'http://sink.example/hook', 'sink down', 0, now() - interval '1 hour',
                            '0.3.0', interval '10 seconds');
RESET ROLE;
SELECT is((SELECT state_since FROM once.relay_heartbeats), now(), 'a new state starts its state_since');

-- The console reads every relay with its age and whether it is alive.
INSERT INTO once.relay_heartbeats VALUES
    ('r2', 'host-b', 7, 'wal', 'stdout:', 'streaming', now() - interval '2 minutes', now() - interval '31 seconds',
     interval '10 seconds', 0, now() - interval '1 day', '0.3.0'),
    ('r3', 'host-c', 8, 'wal', 'stdout:', 'stopped', now() - interval '1 minute', now() - interval '1 minute',
     interval '10 seconds', 0, now() - interval '1 day', '0.3.0'),
    ('r4', 'host-d', 9, 'table', 'stdout:', 'relaying', now() - interval '8 days', now() - interval '8 days',
     interval '10 seconds', 0, now() - interval '9 days', '0.3.0');
-- (this session plays relay r1's connection; r5 beats in time but has no connection: killed)
INSERT INTO once.relay_heartbeats VALUES
    ('r5', 'host-e', 10, 'table', 'stdout:', 'relaying', now(), now(), interval '10 seconds', 0, now(), '0.3.0');
SET application_name = 'once-relay r1';
SET ROLE hb_viewer;
SELECT results_eq($$SELECT relay, state, round(age_seconds)::integer, alive FROM once.console_relay_heartbeats()$$,
                  $$VALUES ('r1', 'sink down', 0, true), ('r2', 'streaming', 31, false), ('r3', 'stopped', 60, false),
                           ('r4', 'relaying', 691200, false), ('r5', 'relaying', 0, false)$$,
                  'the console sees every relay: alive = beaten within two intervals, connected and not stopped');
SELECT throws_ok($$SELECT once.relay_heartbeat('r9', 'h', 1, 'table', 's', 'relaying', 0, now(), '0.3.0', interval '10 seconds')$$,
                 '42501', NULL, 'the console''s viewer cannot beat');
SELECT lives_ok($$SELECT * FROM once.console_wal_slots()$$, 'the console''s viewer reads the slots');
SELECT lives_ok($$SELECT * FROM once.console_retrying_counts()$$, 'and the retrying messages per topic');
SET ROLE hb_producer;
SELECT throws_ok($$SELECT * FROM once.console_relay_heartbeats()$$, '42501', NULL, 'a producer cannot read the heartbeats');
RESET ROLE;

-- Any relay's beat removes the rows of relays gone for 7 days.
SET ROLE hb_relay;
SELECT once.relay_heartbeat('r1', 'host-a', 4242, 'table', 'http://sink.example/hook', 'relaying', 1, now() - interval '1 hour',
                            '0.3.0', interval '10 seconds');
RESET ROLE;
SELECT results_eq($$SELECT relay FROM once.relay_heartbeats ORDER BY 1$$, $$VALUES ('r1'), ('r2'), ('r3'), ('r5')$$,
                  'a relay gone for 8 days is removed at the next beat');

SELECT * FROM finish();
ROLLBACK;
