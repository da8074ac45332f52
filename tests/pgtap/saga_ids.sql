-- Saga ids are unique per definition. On 0.2 saga_id was the global
-- primary key of once.saga_instances: a producer allowed to start any definition could start
-- one under an id another service was about to use, and that service got ON404 (or, with the
-- same name and input, the squatter's saga). Now a saga is (name, saga_id); commands carry the
-- definition's name ("saga"), and replies, saga_retry and saga_abort may name it: they must
-- when sagas of several definitions have the id (ON408).
BEGIN;
SELECT plan(25);

SELECT once.saga_define('payment', $${"steps": [
  {"name": "charge", "action": {"topic": "pay.charge"}, "compensation": {"topic": "pay.refund"}},
  {"name": "receipt", "action": {"topic": "pay.receipt"}, "kind": "pivot"}]}$$);
SELECT once.saga_define('newsletter', $${"steps": [{"name": "charge", "action": {"topic": "mail.send"}}]}$$);
CREATE ROLE payments_svc LOGIN IN ROLE once_producer;
CREATE ROLE squatter LOGIN IN ROLE once_producer;
SELECT once.grant_saga_start('payments_svc', 'payment');
SELECT once.grant_saga_start('squatter', 'newsletter');
CREATE FUNCTION pg_temp.status(p_name text, p_id text) RETURNS text LANGUAGE sql AS $$
    SELECT status FROM once.sagas WHERE name = p_name AND saga_id = p_id $$;

-- The squatter takes the id first, in the one definition it may start.
SET ROLE squatter;
SELECT is(once.saga_start('newsletter', 'order-42', '{"amount": 5}'), 'order-42', 'the squatter starts its saga order-42 first');
RESET ROLE;
SET ROLE payments_svc;
SELECT is(once.saga_start('payment', 'order-42', '{"amount": 5}'), 'order-42',
          'the rightful starter still starts its own saga order-42 (0.2: ON404, or the squatter''s saga)');
SELECT is((SELECT count(*) FROM once.sagas WHERE saga_id = 'order-42'), 1::bigint,
          '... and sees its own saga only');
SELECT is(once.saga_start('payment', 'order-42', '{"amount": 5}'), 'order-42', 'saga_start stays idempotent per definition');
SELECT throws_ok($$SELECT once.saga_start('payment', 'order-42', '{"amount": 6}')$$, 'ON404', NULL,
                 'another input for the same definition and id: ON404, as before');
RESET ROLE;
SELECT is((SELECT count(*) FROM once.saga_instances WHERE saga_id = 'order-42'), 2::bigint, 'two sagas have the id order-42');
SELECT is((SELECT count(*) FROM once.outbox WHERE payload->>'saga_id' = 'order-42' AND payload->>'saga' = 'payment'), 1::bigint,
          'the payment command carries its definition''s name in the payload');

-- Replies: by id alone while it is unique, with the name when it is not.
SELECT throws_ok($$SELECT once.saga_reply('order-42', 'charge', 'succeeded')$$, 'ON408', NULL,
                 'a reply by an id two definitions have is refused (ON408), not applied to either');
SELECT is(pg_temp.status('payment', 'order-42'), 'running', '... the payment saga is untouched');
SELECT is(once.saga_reply('order-42', 'charge', 'succeeded', '{"charge": "ch_1"}', 'r-1', name => 'payment'), 'applied',
          'a reply that names the definition is applied to that saga');
SELECT is((SELECT step FROM once.sagas WHERE name = 'payment' AND saga_id = 'order-42'), 'receipt', '... which moves on');
SELECT is((SELECT step FROM once.sagas WHERE name = 'newsletter' AND saga_id = 'order-42'), 'charge', '... and the other saga does not');
SELECT throws_ok($$SELECT once.saga_reply('order-42', 'charge', 'succeeded', name => 'nope')$$, 'ON402', NULL,
                 'a reply naming a definition without that saga: ON402');
-- The built-in reply handler reads the name from the reply's "saga" field.
SELECT lives_ok($$SELECT once.saga_reply_handler(ROW('svc', 'r-2', 'saga.newsletter.reply',
                  '{"saga_id": "order-42", "step": "charge", "outcome": "succeeded", "saga": "newsletter"}', '{}')::once.inbound)$$,
                'the reply handler applies a reply carrying "saga"');
SELECT is(pg_temp.status('newsletter', 'order-42'), 'completed', '... to the saga of that definition');
SELECT throws_ok($$SELECT once.saga_reply_handler(ROW('svc', 'r-3', 'saga.payment.reply',
                  '{"saga_id": "order-42", "step": "receipt", "outcome": "succeeded"}', '{}')::once.inbound)$$, 'ON408', NULL,
                 'the reply handler refuses a reply without "saga" for an id two definitions have');
-- A unique id needs no name (replies of services that predate the field).
SET ROLE payments_svc;
SELECT once.saga_start('payment', 'order-43');
RESET ROLE;
SELECT is(once.saga_reply('order-43', 'charge', 'succeeded'), 'applied', 'a reply by a unique id alone is applied, as in 0.2');

-- Admin functions take the name the same way.
SELECT throws_ok($$SELECT once.saga_abort('order-42', 'by hand')$$, 'ON408', NULL, 'saga_abort by an ambiguous id: ON408');
SELECT is(once.saga_abort('order-42', 'by hand', 'payment'), 'compensating', 'saga_abort with the name');
SELECT is(pg_temp.status('newsletter', 'order-42'), 'completed', '... touches only that saga');
SELECT is((SELECT array_agg(DISTINCT name) FROM once.saga_history WHERE saga_id = 'order-42' AND to_status = 'compensating'),
          ARRAY['payment'], 'the history names the definition of each transition');
SELECT throws_ok($$SELECT once.saga_retry('order-42')$$, 'ON408', NULL, 'saga_retry by an ambiguous id: ON408');

-- Per-key order is per role: a saga's commands (key = saga id) are in the order of
-- the role that started it, whoever drives it, so the squatter's own saga order-42 cannot hold
-- back payments_svc's commands of order-42.
SELECT is((SELECT array_agg(DISTINCT key_owner::regrole::text) FROM once.outbox WHERE payload->>'saga' = 'payment' AND key = 'order-42'),
          ARRAY['payments_svc'], 'every payment command of order-42 is in the order of the role that started it');
SELECT is((SELECT count(*) FROM once.outbox WHERE payload->>'saga' = 'payment' AND key = 'order-42'), 3::bigint,
          '... the first (sent by saga_start), the second (sent by a reply applied by the superuser) and a compensation');
SELECT is((SELECT array_agg(DISTINCT key_owner::regrole::text) FROM once.outbox WHERE payload->>'saga' = 'newsletter' AND key = 'order-42'),
          ARRAY['squatter'], 'the squatter''s commands of order-42 are in its own order');

SELECT * FROM finish();
ROLLBACK;
