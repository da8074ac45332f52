-- A small database for once-console's tests (tests/integration/console_browser.sh): a backlog
-- on three topics, dead letters (one of them the head of a key, so that key is blocked) and
-- sagas in every status, among them failed ones whose cause differs from their last error.
\set ON_ERROR_STOP on
CREATE EXTENSION pg_once;

-- Backlog: ready messages, a delayed one, and keyed ones.
SELECT count(once.send('orders.placed', jsonb_build_object('order', g), 'order-' || g)) FROM generate_series(1, 40) g;
SELECT once.send('mail.send', '{"to": "ada@example.org", "template": "receipt"}', NULL, NULL, now() + interval '1 hour');

-- Dead letters: payment.capture messages the sink refused. order-7 has a second message
-- waiting behind its dead head: the key is blocked.
SELECT once.send('payment.capture', jsonb_build_object('order', g, 'amount', 450 + g),
                 'pay-' || g, '{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}')
  FROM generate_series(1, 6) g;
SELECT once.send('payment.capture', '{"order": 7, "amount": 900}', 'pay-7');
SELECT once.send('payment.capture', '{"order": 7, "amount": 900, "retry": true}', 'pay-7');
SELECT count(once.dead('test-relay', m.id, 'HTTP 502 from payments.example: card processor unreachable (attempt ' || m.attempt || ')'))
  FROM once.claim('test-relay', 100, '1 minute', ARRAY['payment.capture']) m;

-- Retrying: 55 sms.send messages the sink failed once (more than a page of the retrying list).
SELECT count(once.send('sms.send', jsonb_build_object('to', '+4470000' || g))) FROM generate_series(1, 55) g;
SELECT count(once.nack('test-relay', m.id, 'SMS gateway answered 503 (attempt ' || m.attempt || ')'))
  FROM once.claim('test-relay', 100, '1 minute', ARRAY['sms.send']) m;

-- Sagas (replies by hand: once.saga_reply).
SELECT once.saga_define('cafe_order', $${"steps": [
  {"name": "reserve_stock", "action": {"topic": "stock.reserve"},
   "compensation": {"topic": "stock.release", "max_attempts": 1}, "timeout": "1 hour"},
  {"name": "capture_payment", "action": {"topic": "payment.charge"}, "compensation": {"topic": "payment.refund"},
   "timeout": "1 hour", "kind": "pivot"},
  {"name": "notify", "action": {"topic": "notify.send"}, "kind": "retriable", "timeout": "1 hour"}]}$$);

-- completed
SELECT once.saga_start('cafe_order', 'order-ok-' || g, jsonb_build_object('item', 'flat white', 'price', 450))
  FROM generate_series(1, 3) g;
SELECT once.saga_reply('order-ok-' || g, 'reserve_stock', 'succeeded', '{"reservation": "r-1"}'),
       once.saga_reply('order-ok-' || g, 'capture_payment', 'succeeded', '{"charge": "ch-1"}'),
       once.saga_reply('order-ok-' || g, 'notify', 'succeeded')
  FROM generate_series(1, 3) g;
-- compensated: sold out
SELECT once.saga_start('cafe_order', 'order-soldout', '{"item": "matcha", "price": 500}');
SELECT once.saga_reply('order-soldout', 'reserve_stock', 'failed', '{"error": "sold out"}');
-- failed: the card was declined, then releasing the stock failed too (the last error hides the cause)
SELECT once.saga_start('cafe_order', 'order-declined-' || g, '{"item": "cortado", "price": 380}')
  FROM generate_series(1, 2) g;
SELECT once.saga_reply('order-declined-' || g, 'reserve_stock', 'succeeded', '{"reservation": "r-9"}'),
       once.saga_reply('order-declined-' || g, 'capture_payment', 'failed', '{"error": "card declined"}'),
       once.saga_reply('order-declined-' || g, 'reserve_stock', 'compensation_failed', '{"error": "stock service timeout"}')
  FROM generate_series(1, 2) g;
-- running
SELECT once.saga_start('cafe_order', 'order-running', '{"item": "latte", "price": 420}');

-- Inbox: a poison message (source allows 2 attempts; both failed).
SELECT once.inbox_configure('shop-relay', '7 days', 2);
SELECT once.inbox_failed('shop-relay', 'msg-poison-1', 'handler cafe.record_order: null value in column "price"')
  FROM generate_series(1, 2);
-- A stuck idempotency key: acquired, checkpointed, never completed.
SELECT state FROM once.key_acquire('POST /payments', 'idem-stuck-1', '{"order": 17}', '1 hour');
SELECT once.key_checkpoint('POST /payments', 'idem-stuck-1', 'card_charged', '{"charge": "ch-17"}');

-- Two roles hold the same key: a key's identity is (scope, key, owner), each role has its own.
CREATE ROLE console_shop_a NOLOGIN;
CREATE ROLE console_shop_b NOLOGIN;
GRANT once_producer TO console_shop_a, console_shop_b;
SET ROLE console_shop_a;
SELECT state FROM once.key_acquire('POST /refunds', 'idem-shared', '{"order": 21}', '1 hour');
SET ROLE console_shop_b;
SELECT state FROM once.key_acquire('POST /refunds', 'idem-shared', '{"order": 22}', '1 hour');
RESET ROLE;

-- Two definitions with the same saga id: saga ids are unique per definition, a saga is
-- (name, saga_id). Both twins are running.
SELECT once.saga_define('gift_order', $${"steps": [
  {"name": "wrap_gift", "action": {"topic": "gift.wrap"}, "compensation": {"topic": "gift.unwrap"}, "timeout": "1 hour"}]}$$);
SELECT once.saga_start('cafe_order', 'order-twin', '{"item": "twin cafe"}');
SELECT once.saga_start('gift_order', 'order-twin', '{"item": "twin gift"}');
