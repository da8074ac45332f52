-- A big pg_once database for measuring once-console's pages (tests/console/measure.sh):
-- 100k dead letters (each the head of its own key), a 1M-message backlog on four topics (10k
-- of it retrying after a failed attempt) and 100k sagas (5k of them failed), plus the commands
-- those sagas sent.
\set ON_ERROR_STOP on
CREATE EXTENSION pg_once;
SET client_min_messages = warning;

SELECT sum(n) AS dead_letters FROM (
    SELECT (SELECT count(*) FROM once.send_many('payment.capture',
                ARRAY(SELECT jsonb_build_object('order', c * 10000 + g, 'amount', 450) FROM generate_series(1, 10000) g),
                ARRAY(SELECT 'pay-' || (c * 10000 + g) FROM generate_series(1, 10000) g))) AS n
      FROM generate_series(0, 9) c) s;
DO $$
BEGIN
    FOR i IN 1..10 LOOP
        PERFORM once.dead('filler', m.id, 'HTTP 502 from payments.example: card processor unreachable')
           FROM once.claim('filler', 10000, '1 hour', ARRAY['payment.capture']) m;
    END LOOP;
END
$$;

SELECT sum(n) AS backlog FROM (
    SELECT (SELECT count(*) FROM once.send_many((ARRAY['orders.placed', 'mail.send', 'stock.reserve', 'audit.log'])[c % 4 + 1],
                ARRAY(SELECT jsonb_build_object('n', c * 10000 + g) FROM generate_series(1, 10000) g))) AS n
      FROM generate_series(0, 99) c) s;

-- 10k of them wait for a retry after a failed attempt (the retrying page).
SELECT count(once.nack('filler', m.id, 'HTTP 503 from mail.example: try again later'))
  FROM once.claim('filler', 10000, '1 hour', ARRAY['mail.send']) m;

SELECT once.saga_define('cafe_order', $${"steps": [
  {"name": "reserve_stock", "action": {"topic": "stock.reserve"}, "compensation": {"topic": "stock.release"}, "timeout": "1 hour"},
  {"name": "capture_payment", "action": {"topic": "payment.charge"}, "compensation": {"topic": "payment.refund"},
   "timeout": "1 hour", "kind": "pivot"},
  {"name": "notify", "action": {"topic": "notify.send"}, "kind": "retriable", "timeout": "1 hour"}]}$$);
DO $$
BEGIN
    FOR c IN 0..9 LOOP
        PERFORM once.saga_start('cafe_order', 'order-' || (c * 10000 + g), jsonb_build_object('item', 'latte', 'n', g))
           FROM generate_series(1, 10000) g;
        COMMIT;
    END LOOP;
END
$$;
-- a reply that fits nothing stops a saga in failed
SELECT count(once.saga_reply('order-' || g, 'notify', 'succeeded')) AS failed FROM generate_series(1, 100000, 20) g;
VACUUM ANALYZE;
