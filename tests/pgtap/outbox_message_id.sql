-- A repeated explicit message_id is a no-op only for the same message (issue 11, finding 6).
-- On 0.1 the second send was skipped silently whatever it contained, so a producer could
-- pre-empt another producer's id and the relay delivered the first payload.
BEGIN;
SELECT plan(7);

SELECT is(once.send('orders.created', '{"id": 7}', key => 'order-7',
                    message_id => '01890000-0000-7000-8000-000000000007'),
          '01890000-0000-7000-8000-000000000007'::uuid, 'the first send stores the message');
SELECT is(once.send('orders.created', '{"id": 7}', key => 'order-7',
                    message_id => '01890000-0000-7000-8000-000000000007'),
          '01890000-0000-7000-8000-000000000007'::uuid, 'the same message again is a no-op');
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
SELECT is((SELECT payload FROM once.outbox WHERE id = '01890000-0000-7000-8000-000000000007'),
          '{"id": 7}'::jsonb, 'the stored message is unchanged');

SELECT * FROM finish();
ROLLBACK;
