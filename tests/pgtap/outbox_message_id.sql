-- Explicit message ids. A repeated explicit message_id is a no-op only for the same message
-- (0.1 skipped the second send silently whatever it contained). And an
-- explicit id belongs to the role that sends it: on 0.2 a role that
-- learned another's id could send first, its payload went out under the victim's id and the
-- victim got ON212. The message's id is now a v8 uuid hashed from the role and the chosen id.
BEGIN;
SELECT plan(16);

SELECT once.send('orders.created', '{"id": 7}', key => 'order-7',
                 message_id => '01890000-0000-7000-8000-000000000007') AS first_id \gset
SELECT isnt(:'first_id'::uuid, '01890000-0000-7000-8000-000000000007'::uuid,
            'the message id is derived from the chosen one, not the chosen one itself');
SELECT is(substr(:'first_id', 15, 1), '8', '... a version 8 uuid');
SELECT is(once.send('orders.created', '{"id": 7}', key => 'order-7',
                    message_id => '01890000-0000-7000-8000-000000000007'),
          :'first_id'::uuid, 'the same message again is a no-op returning the same id');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE topic = 'orders.created'), 1, '... one message stored');
SELECT throws_ok($$SELECT once.send('orders.created', '{"id": 8}', key => 'order-7',
                                    message_id => '01890000-0000-7000-8000-000000000007')$$,
                 'ON212', NULL, 'another payload under the same id: ON212');
SELECT throws_ok($$SELECT once.send('orders.cancelled', '{"id": 7}', key => 'order-7',
                                    message_id => '01890000-0000-7000-8000-000000000007')$$,
                 'ON212', NULL, 'another topic under the same id: ON212');
SELECT throws_ok($$SELECT once.send('orders.created', '{"id": 7}',
                                    message_id => '01890000-0000-7000-8000-000000000007')$$,
                 'ON212', NULL, 'another key (none) under the same id: ON212');
SELECT throws_ok($$SELECT once.send('orders.created', '{"id": 7}', key => 'order-7', headers => '{"h": "v"}',
                                    message_id => '01890000-0000-7000-8000-000000000007')$$,
                 'ON212', NULL, 'other headers under the same id: ON212');
SELECT is((SELECT payload FROM once.outbox WHERE id = :'first_id'), '{"id": 7}'::jsonb,
          'the stored message is unchanged');

-- Two roles choose the same id: each gets a message of its own.
CREATE ROLE msgid_mallory LOGIN IN ROLE once_producer;
CREATE ROLE msgid_victim LOGIN IN ROLE once_producer;
SET ROLE msgid_mallory;
SELECT once.send('payments.refund', '{"to": "mallory"}', message_id => '01890000-0000-7000-8000-0000000000aa') AS mallory_id \gset
RESET ROLE;
SET ROLE msgid_victim;
SELECT lives_ok($$SELECT once.send('payments.refund', '{"to": "victim"}', message_id => '01890000-0000-7000-8000-0000000000aa')$$,
                'a role that chose an id another role used first is not refused');
SELECT once.send('payments.refund', '{"to": "victim"}', message_id => '01890000-0000-7000-8000-0000000000aa') AS victim_id \gset
RESET ROLE;
SELECT isnt(:'victim_id'::uuid, :'mallory_id'::uuid, '... its message has another id than the first role''s');
SELECT is((SELECT payload FROM once.outbox WHERE id = :'victim_id'), '{"to": "victim"}'::jsonb,
          '... and carries its own payload under its id');
SELECT is((SELECT payload FROM once.outbox WHERE id = :'mallory_id'), '{"to": "mallory"}'::jsonb,
          'the first role''s message is its own, under its own id');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE id = '01890000-0000-7000-8000-0000000000aa'), 0,
          'no message carries the chosen id itself');
SET ROLE msgid_victim;
SELECT is(once.send('payments.refund', '{"to": "victim"}', message_id => '01890000-0000-7000-8000-0000000000aa'),
          :'victim_id'::uuid, 'the same role choosing the same id gets the same message id');
RESET ROLE;
-- The derivation is fixed (a message sent again after a restart, or by another backend,
-- gets the same id): v8 over SHA-256('pg_once message_id v1' \0 role \0 chosen id bytes).
SELECT is(:'victim_id'::uuid,
          (SELECT overlay(overlay(substr(h, 1, 32) PLACING '8' FROM 13 FOR 1)
                          PLACING to_hex((('x' || substr(h, 17, 1))::bit(4)::int & 3) | 8) FROM 17 FOR 1)::uuid
             FROM (SELECT encode(sha256('pg_once message_id v1'::bytea || '\x00'::bytea || 'msgid_victim'::bytea
                                        || '\x00'::bytea || decode('018900000000700080000000000000aa', 'hex')), 'hex') AS h) d),
          'the id is v8(SHA-256(prefix, role, chosen id)), as docs/outbox.md states');

SELECT * FROM finish();
ROLLBACK;
