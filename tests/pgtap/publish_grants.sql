-- Publishing grants per topic pattern: on 0.2 any producer could send
-- on any topic, saga replies and other services' events included.
BEGIN;
SELECT plan(14);

CREATE ROLE pub_alice LOGIN IN ROLE once_producer;
CREATE ROLE pub_bob LOGIN IN ROLE once_producer;
CREATE ROLE pub_alice_worker LOGIN IN ROLE pub_alice;   -- has alice's privileges
CREATE ROLE pub_admin LOGIN IN ROLE once_admin;

-- No grant at all: topics are open, as in 0.2.
SET ROLE pub_bob;
SELECT lives_ok($$SELECT once.send('billing.refund', '{}')$$, 'without any grant every producer publishes everywhere');
SELECT throws_ok($$SELECT once.grant_publish('pub_bob', '>')$$, '42501', NULL, 'a producer cannot grant itself publishing');

SET ROLE pub_admin;
SELECT is(once.grant_publish('pub_alice', 'orders.*'), true, 'the admin grants alice orders.*');
SELECT is(once.grant_publish('pub_alice', 'orders.*'), false, 'granting it again is a no-op');
SELECT throws_ok($$SELECT once.grant_publish('pub_alice', 'orders..x')$$, 'ON301', NULL, 'a bad pattern is refused (ON301)');

SET ROLE pub_alice;
SELECT lives_ok($$SELECT once.send('orders.created', '{}')$$, 'alice publishes on a granted topic');
SELECT throws_ok($$SELECT once.send('billing.refund', '{}')$$, 'ON215',
    'role "pub_alice" may not publish on topic "billing.refund"', 'alice is refused elsewhere (ON215)');
SELECT throws_ok($$SELECT once.send_many('billing.refund', ARRAY['{}'::jsonb])$$, 'ON215', NULL,
    'send_many is checked too');
SET ROLE pub_alice_worker;
SELECT lives_ok($$SELECT once.send('orders.paid', '{}')$$, 'a role with alice''s privileges publishes through her grant');
SET ROLE pub_bob;
SELECT throws_ok($$SELECT once.send('orders.created', '{}')$$, 'ON215', NULL,
    'once a grant exists, a producer without one is refused');
RESET ROLE;
SELECT lives_ok($$SELECT once.send('anything.at.all', '{}')$$, 'a superuser has every role''s privileges');
SELECT is((SELECT count(*) FROM once.outbox WHERE topic = 'billing.refund'), 1::bigint,
    'the refused sends wrote nothing');

SET ROLE pub_admin;
SELECT is(once.revoke_publish('pub_alice'), 1, 'the admin revokes alice''s grants');
SET ROLE pub_bob;
SELECT lives_ok($$SELECT once.send('orders.created', '{}')$$, 'with no grant left, topics are open again');
RESET ROLE;
SELECT * FROM finish();
ROLLBACK;
