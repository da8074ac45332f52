-- Per-key order is per sending role. On 0.2 order was by key alone:
-- bob sent `key => 'order-42'` with a deliver_at ten years ahead (or on a topic no relay
-- serves) and alice's messages of order-42 waited behind it for ten years. Now a key orders
-- the messages of the role that sent them; a role's own messages keep their order, and keyed
-- messages written before the update (owner 0) still go first.
BEGIN;
SELECT plan(14);

CREATE ROLE scope_alice LOGIN IN ROLE once_producer;
CREATE ROLE scope_bob LOGIN IN ROLE once_producer;

SET ROLE scope_bob;
SELECT once.send('orders.events', '{"by": "bob"}', key => 'order-42',
                 deliver_at => now() + interval '3650 days') AS bob_held \gset
SELECT once.send('orders.events', '{"by": "bob", "n": 2}', key => 'order-42') AS bob_next \gset
RESET ROLE;
SET ROLE scope_alice;
SELECT once.send('orders.events', '{"by": "alice", "n": 1}', key => 'order-42') AS alice_1 \gset
SELECT once.send('orders.events', '{"by": "alice", "n": 2}', key => 'order-42') AS alice_2 \gset
RESET ROLE;

SELECT is((SELECT key_owner::regrole::text FROM once.outbox WHERE id = :'alice_1'), 'scope_alice',
          'a keyed message records the role that sent it as its key''s owner');
SELECT is((SELECT key_owner FROM once.outbox WHERE id = :'bob_held'), 'scope_bob'::regrole::oid,
          '... each role its own');
SELECT is((SELECT pos FROM once.outbox WHERE id = :'alice_1'), NULL,
          'alice''s message does not wait behind bob''s delayed message of the same key');
SELECT is((SELECT pos FROM once.outbox WHERE id = :'bob_next'), 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid,
          'bob''s own next message waits behind his delayed one');

SELECT is(array_agg(c.id ORDER BY c.id), ARRAY[:'alice_1'::uuid],
          'a claim takes alice''s first message: another role''s hold does not hold it back')
  FROM once.claim('relay-a', 10) c;
SELECT is((SELECT count(*)::int FROM once.claim('relay-a', 10)), 0,
          'alice''s second message waits for her first (her order holds)');
SELECT is(once.ack('relay-a', ARRAY[:'alice_1'::uuid]), 1, 'her first is acknowledged');
SELECT is(array_agg(c.id), ARRAY[:'alice_2'::uuid], '... then her second is claimed')
  FROM once.claim('relay-a', 10) c;

-- once.blocked_keys names the role whose order is held.
SELECT is((SELECT key_owner::text FROM once.blocked_keys WHERE key = 'order-42'), 'scope_bob',
          'blocked_keys shows bob''s key held by his delayed message, with its owner');
SELECT is((SELECT waiting FROM once.blocked_keys WHERE key = 'order-42'), 1::bigint,
          '... and counts only bob''s message behind it');
SELECT is((SELECT blocked FROM once.outbox_stats WHERE topic = 'orders.events'), 1::bigint,
          'outbox_stats counts bob''s waiting message as blocked, not alice''s');

-- A message written before 0.3 (owner 0: its sender is unknown) goes before every role's
-- later messages of its key.
INSERT INTO once.outbox (id, topic, key, key_seq, payload, visible_at, key_owner)
VALUES ('01890000-0000-7000-8000-000000000001', 'legacy.events', 'cart-7',
        '01890000-0000-7000-8000-000000000001', '{"sent": "by 0.2"}', now(), 0);
SET ROLE scope_alice;
SELECT once.send('legacy.events', '{"by": "alice"}', key => 'cart-7') AS alice_cart \gset
RESET ROLE;
SELECT is(array_agg(c.id), ARRAY['01890000-0000-7000-8000-000000000001'::uuid],
          'a claim takes the owner-0 message of the key, not alice''s later one')
  FROM once.claim('relay-b', 10, topics => ARRAY['legacy.events']) c;
SELECT is(once.ack('relay-b', ARRAY['01890000-0000-7000-8000-000000000001'::uuid]), 1, 'it is acknowledged');
SELECT is(array_agg(c.id), ARRAY[:'alice_cart'::uuid], '... then alice''s message of the key is claimed')
  FROM once.claim('relay-b', 10, topics => ARRAY['legacy.events']) c;

SELECT * FROM finish();
ROLLBACK;
