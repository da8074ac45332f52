-- Dropping an inbox handler removes its subscriptions: DROP FUNCTION, DROP SCHEMA
-- ... CASCADE; other drops leave subscriptions alone; the console lists a subscription whose
-- handler is gone when event triggers did not fire.
BEGIN;
SELECT plan(12);

CREATE TABLE effects (handler text, message_id text);
CREATE FUNCTION h1(msg once.inbound) RETURNS void LANGUAGE sql AS $$ INSERT INTO effects VALUES ('h1', msg.message_id) $$;
CREATE FUNCTION h2(msg once.inbound) RETURNS void LANGUAGE sql AS $$ INSERT INTO effects VALUES ('h2', msg.message_id) $$;
CREATE FUNCTION unrelated() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE SCHEMA app;
CREATE FUNCTION app.h3(msg once.inbound) RETURNS void LANGUAGE sql AS $$ INSERT INTO effects VALUES ('h3', msg.message_id) $$;

SELECT once.subscribe('order.*', 'h1(once.inbound)');
SELECT once.subscribe('order.created', 'h2(once.inbound)');
SELECT once.subscribe('pay.*', 'h1(once.inbound)');
SELECT once.subscribe('app.*', 'app.h3(once.inbound)');
SELECT is(once.deliver('s', 'm1', 'order.created', '{}'), 'processed', 'both handlers run before the drop');

DROP FUNCTION unrelated();
SELECT is((SELECT count(*) FROM once.inbox_subscriptions), 4::bigint, 'dropping another function changes nothing');

SELECT lives_ok($$DROP FUNCTION h1(once.inbound)$$, 'DROP FUNCTION of a subscribed handler works');
SELECT results_eq($$SELECT topic_pattern, handler::text FROM once.inbox_subscriptions ORDER BY 1$$,
                  $$VALUES ('app.*', 'app.h3(once.inbound)'), ('order.created', 'h2(once.inbound)')$$,
                  'both subscriptions of h1 are removed, the others stay');
DELETE FROM effects;
SELECT is(once.deliver('s', 'm2', 'order.created', '{}'), 'processed', 'the remaining handler runs (the cache followed)');
SELECT results_eq($$SELECT handler FROM effects$$, ARRAY['h2'], 'only h2 ran');
SELECT is(once.deliver('s', 'm3', 'pay.done', '{}'), 'no_handler', 'a topic left without handler gets no_handler, not ON305');

DROP SCHEMA app CASCADE;
SELECT is((SELECT count(*) FROM once.inbox_subscriptions WHERE topic_pattern = 'app.*'), 0::bigint,
          'DROP SCHEMA ... CASCADE removes the subscriptions of the handlers in it');

-- one more, on its own
CREATE FUNCTION h4(msg once.inbound) RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT once.subscribe('w.*', 'h4(once.inbound)');
SELECT is((SELECT count(*) FROM once.inbox_subscriptions WHERE topic_pattern = 'w.*'), 1::bigint, 'h4 is subscribed');
DROP FUNCTION h4(once.inbound);
SELECT is((SELECT count(*) FROM once.inbox_subscriptions WHERE topic_pattern = 'w.*'), 0::bigint, 'and gone with h4');

-- without event triggers (replica role) a subscription outlives its handler: the console marks it
CREATE FUNCTION h5(msg once.inbound) RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT once.subscribe('z.*', 'h5(once.inbound)');
SET LOCAL session_replication_role = replica;
DROP FUNCTION h5(once.inbound);
RESET session_replication_role;
SELECT results_eq($$SELECT topic_pattern, handler_exists FROM once.console_subscriptions()$$,
                  $$VALUES ('z.*', false), ('order.created', true)$$,
                  'console_subscriptions lists the orphan first, marked');
SELECT matches((SELECT handler FROM once.console_subscriptions() WHERE topic_pattern = 'z.*'), '^function oid [0-9]+$',
               'the orphan''s handler is shown as its oid');

SELECT * FROM finish();
ROLLBACK;
