-- A delayed message that holds back later messages of its key shows in once.blocked_keys.
-- On 0.1 one producer's once.send(..., key => 'order-7',
-- deliver_at => now() + '100 years') blocked every later order-7 message while blocked_keys
-- stayed empty.
BEGIN;
SELECT plan(4);

SELECT ok(once.send('x.unused', '{}', key => 'order-7', deliver_at => now() + interval '1 day') IS NOT NULL,
          'a producer sends a delayed message under a key');
SELECT is((SELECT count(*) FROM once.blocked_keys), 0::bigint, 'nothing waits behind it yet: not blocked');
SELECT ok(once.send('orders.paid', '{"id": 7}', key => 'order-7') IS NOT NULL, 'another producer sends under the key');
SELECT is((SELECT key || ':' || reason || ':' || waiting || ':' || (held_until > now())::text FROM once.blocked_keys),
          'order-7:delayed:1:true', 'blocked_keys shows the delayed head and what waits behind it');

SELECT * FROM finish();
ROLLBACK;
