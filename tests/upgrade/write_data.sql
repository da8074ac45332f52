-- Data written through every API of an old version, before ALTER EXTENSION pg_once UPDATE:
-- what a production database has in it at the moment of the update.
CREATE SCHEMA app;
CREATE TABLE app.handled (message_id text PRIMARY KEY, topic text);
CREATE FUNCTION app.handle(msg once.inbound) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO app.handled VALUES (msg.message_id, msg.topic) $$;

-- Idempotency keys: a finished once.run, a finished key, one in progress with a checkpoint.
SELECT response FROM once.run('payments', 'done-run', '{"amount": 5}', 'SELECT jsonb_build_object(''charged'', ($1->>''amount'')::int)');
SELECT attempt FROM once.key_acquire('payments', 'done-key', '{"amount": 7}');
SELECT once.key_complete('payments', 'done-key', '{"charge": "ch_7"}', 201);
SELECT attempt FROM once.key_acquire('payments', 'open-key', '{"amount": 9}', lease => '1 hour');
SELECT once.key_checkpoint('payments', 'open-key', 'charged', '{"charge": "ch_9"}');
-- A key stored for longer than a day (keys stored by 0.1 have no owner).
SELECT response FROM once.run('payments', 'long-ttl', '{}', 'SELECT ''{}''::jsonb', ttl => '20 days');

-- Outbox: a keyed sequence with its head in flight (claimed with a lease), a dead letter,
-- a delayed message and a plain ready one.
SELECT once.send('order.created', '{"n": 1}', key => 'order-1');
SELECT once.send('order.paid',    '{"n": 2}', key => 'order-1');
SELECT count(*) FROM once.claim('relay-a', 1, '1 hour', ARRAY['order.created']);
SELECT once.send('mail.send', '{"to": "x"}') \gset poison_
SELECT count(*) FROM once.claim('relay-a', 10, '1 hour', ARRAY['mail.send']);
SELECT once.dead('relay-a', :'poison_send', 'HTTP 400: bad address');
SELECT once.send('report.due', '{"n": 3}', deliver_at => now() + interval '1 hour');
SELECT once.send('stock.changed', '{"n": 4}');
-- for 0.2's claim_locked: three messages of a topic family, two of them of one key
SELECT once.send('audit.login', '{"n": 5}', key => 'user-1');
SELECT once.send('audit.login', '{"n": 6}', key => 'user-1');
SELECT once.send('audit.logout', '{"n": 7}');

-- Inbox: a received id, a delivered message through a subscription, a recorded failure.
SELECT once.receive('shop', 'm-1', 'order.created');
SELECT once.subscribe('order.*', 'app.handle(once.inbound)');
SELECT once.deliver('shop', 'm-2', 'order.created', '{"n": 1}');
SELECT once.inbox_failed('shop', 'm-3', 'handler failed');

-- A saga waiting for its first step's reply.
SELECT once.saga_define('upgrade_order', $${"steps": [
  {"name": "reserve", "action": {"topic": "stock.reserve"}, "compensation": {"topic": "stock.release"}, "timeout": "1 hour"},
  {"name": "pay",     "action": {"topic": "payment.capture"}, "kind": "pivot", "timeout": "1 hour"}
]}$$);
SELECT once.saga_start('upgrade_order', 'order-77', '{"total": 12}');

-- A saga compensating since its payment failed (its failure_cause comes from its history in
-- the update to 0.3).
SELECT once.saga_start('upgrade_order', 'order-cause-1', '{"total": 30}');
SELECT once.saga_reply('order-cause-1', 'reserve', 'succeeded', '{"reservation": "r9"}', 'reply-cause-1');
SELECT once.saga_reply('order-cause-1', 'pay', 'failed', '{"error": "card declined"}', 'reply-cause-2');
