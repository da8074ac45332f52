-- cafe_orders: takes orders (AP: accept at once, "confirming...") and runs the order saga.
CREATE SCHEMA IF NOT EXISTS cafe;

SELECT once.saga_define('campus_cafe_order', $${
  "steps": [
    {"name": "reserve_stock",   "action": {"topic": "stock.reserve"},   "compensation": {"topic": "stock.release", "max_attempts": 10},
     "timeout": "5 seconds", "max_attempts": 5},
    {"name": "capture_payment", "action": {"topic": "payment.capture"}, "compensation": {"topic": "payment.refund", "max_attempts": 10},
     "timeout": "5 seconds", "max_attempts": 5, "kind": "pivot"},
    {"name": "notify",          "action": {"topic": "notify.send"}, "timeout": "5 seconds", "kind": "retriable"}
  ],
  "reply_to": "saga.campus_cafe_order.reply",
  "retry": {"base": "200 ms", "cap": "2 seconds"}
}$$);

-- Replies arrive through the relays into this database's inbox.
SELECT once.subscribe('saga.campus_cafe_order.reply', 'once.saga_reply_handler(once.inbound)');

CREATE TABLE cafe.orders (
    order_id   text PRIMARY KEY,
    item       text NOT NULL,
    qty        integer NOT NULL CHECK (qty > 0),
    amount     numeric NOT NULL,
    scenario   text NOT NULL DEFAULT 'happy',
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The order and the first saga command commit together (or not at all).
CREATE FUNCTION cafe.place_order(order_id text, item text, qty integer, amount numeric,
                                 card text DEFAULT 'ok', scenario text DEFAULT 'happy')
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cafe.orders VALUES (order_id, item, qty, amount, scenario) ON CONFLICT DO NOTHING;
    RETURN once.saga_start('campus_cafe_order', order_id,
        jsonb_build_object('item', item, 'qty', qty, 'amount', amount, 'card', card));
END $$;

-- What the customer sees.
CREATE VIEW cafe.order_status AS
SELECT o.order_id, o.scenario, s.status AS saga_status, s.step,
       CASE s.status
         WHEN 'completed' THEN 'Your order is confirmed'
         WHEN 'compensated' THEN CASE WHEN s.last_error LIKE '%sold out%' THEN 'Sorry, sold out'
                                      WHEN s.last_error LIKE '%declined%' THEN 'Payment failed; stock returned'
                                      ELSE 'Order cancelled' END
         WHEN 'failed' THEN 'We are looking into your order'
         ELSE CASE WHEN s.step = 'notify' THEN 'Order confirmed (notification delayed, retrying)'
                   ELSE 'Order received (confirming...)' END
       END AS customer_message,
       s.last_error
  FROM cafe.orders o JOIN once.sagas s ON s.saga_id = o.order_id;
