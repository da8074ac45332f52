-- Data for tests/integration/sqlsmith.sh, on top of tests/upgrade/write_data.sql (which
-- leaves some tables empty): every table in schema once gets rows, written through the API.
-- Inbox sources with their own retention and poison threshold; a poison message.
SELECT once.inbox_configure('shop', '3 days', 2);
SELECT once.inbox_failed('shop', 'm-4', 'handler failed');
SELECT once.inbox_failed('shop', 'm-4', 'handler failed again');
-- A topic that keeps delivered history, and one of its messages delivered (outbox_delivered).
SELECT once.topic_policy('stock.changed', 3, '10 ms', '1 minute', '1 day');
SELECT once.ack('relay-b', array_agg(id)) FROM once.claim('relay-b', 10, '1 hour', ARRAY['stock.changed']);
SELECT once.send('stock.changed', '{"n": 8}', key => 'sku-1', headers => '{"X-Trace": "t-1"}');
-- A message retried with a nack (attempts, last error).
SELECT once.send('mail.digest', '{"n": 9}') \gset retried_
SELECT count(*) FROM once.claim('relay-a', 10, '1 hour', ARRAY['mail.digest']);
SELECT once.nack('relay-a', :'retried_send', 'HTTP 503', '1 second');
-- Sagas: the waiting one gets its first reply (saga_replies), one is compensated after its
-- first step failed, one compensates after its pivot failed, one is failed (a reply that does
-- not fit: a person must act) and one is aborted.
SELECT once.saga_reply('order-77', 'reserve', 'succeeded', '{"reservation": "r-1"}', 'reply-1');
SELECT once.saga_start('upgrade_order', 'order-78', '{"total": 3}');
SELECT once.saga_reply('order-78', 'reserve', 'failed', '{"error": "out of stock"}', 'reply-2');
SELECT once.saga_start('upgrade_order', 'order-79', '{"total": 4}');
SELECT once.saga_reply('order-79', 'reserve', 'succeeded', NULL, 'reply-3');
SELECT once.saga_reply('order-79', 'pay', 'failed', '{"error": "card declined"}', 'reply-4');
SELECT once.saga_start('upgrade_order', 'order-80', '{"total": 5}');
SELECT once.saga_reply('order-80', 'pay', 'succeeded', NULL, 'reply-5');
SELECT once.saga_start('upgrade_order', 'order-81', '{"total": 6}');
SELECT once.saga_abort('order-81', 'customer cancelled');
-- A publishing grant (once.publish_grants): every producer may publish on every topic.
SELECT once.grant_publish('once_producer', '>');
-- A saga start grant (once.saga_start_grants): every producer may start upgrade_order.
SELECT once.grant_saga_start('once_producer', 'upgrade_order');
-- An entry of once-console's audit log (once.console_actions), as the console writes it.
INSERT INTO once.console_actions (actor, db_role, action, ids, affected, result)
VALUES ('oncall', session_user, 'redrive', ARRAY['00000000-0000-0000-0000-000000000001'], 0, NULL);
-- The WAL transport: once.wal_secret has its one row (the key) from CREATE EXTENSION; a
-- message a relay gave back from the stream (once.wal_write_back).
SELECT once.wal_write_back(ROW('0190b2c4-0000-7000-8000-0000000000aa', 'mail.digest', NULL, '{"n": 10}', NULL,
                           now(), 1, 'HTTP 503', false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message);
-- A relay's heartbeat (once.relay_heartbeats), as once-relay writes it.
SELECT once.relay_heartbeat('relay-a', 'host-1', 4242, 'table', 'stdout:', 'relaying', 12.5, now(), '0.3.0', '10 seconds');
