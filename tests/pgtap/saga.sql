-- Orchestrated sagas: definitions, start, replies, compensation in reverse order, the pivot,
-- retriable steps, timeouts, retry/abort and the history, played through the CampusCafe order.
-- Time-dependent rules (timeouts, backoff) are tested by moving the stored deadline back.
BEGIN;
SELECT plan(105);

-- Commands leave through once.send; the test reads them back from the outbox.
-- (ordered by key_seq: the send order within the ordering key, which is the saga id)
CREATE VIEW pg_temp.sent AS
SELECT m.topic, m.payload, m.headers, m.key, m.key_seq AS id
  FROM once.outbox m;
CREATE FUNCTION pg_temp.sent_keys(saga text) RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg((headers->>'idempotency_key') || '#' || (headers->>'attempt') ORDER BY id), '{}')
      FROM pg_temp.sent WHERE payload->>'saga_id' = saga $$;
CREATE FUNCTION pg_temp.due(saga text) RETURNS void LANGUAGE sql AS $$
    UPDATE once.saga_instances SET deadline = now() - interval '1 second' WHERE saga_id = saga $$;
CREATE FUNCTION pg_temp.status(saga text) RETURNS text LANGUAGE sql AS $$
    SELECT status FROM once.sagas WHERE saga_id = saga $$;

CREATE SCHEMA cafe;
CREATE TABLE cafe.notify_outage (down boolean);
INSERT INTO cafe.notify_outage VALUES (false);
CREATE TABLE cafe.notified (saga_id text PRIMARY KEY);
CREATE FUNCTION cafe.send_notification(saga_id text, data jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT down FROM cafe.notify_outage) THEN
        INSERT INTO cafe.notified VALUES ('attempted during outage: ' || saga_id) ON CONFLICT DO NOTHING;
        RAISE EXCEPTION 'notification service unavailable';
    END IF;
    INSERT INTO cafe.notified VALUES (saga_id);
    RETURN jsonb_build_object('notified_at', 'now');
END $$;

-- ---------------------------------------------------------------- definitions and validation
SELECT is(once.saga_define('cafe_order', $${"steps": [
  {"name": "reserve_stock",   "action": {"topic": "stock.reserve"},   "compensation": {"topic": "stock.release", "max_attempts": 2},  "timeout": "30 seconds", "max_attempts": 3},
  {"name": "capture_payment", "action": {"topic": "payment.capture"}, "compensation": {"topic": "payment.refund"}, "timeout": "30 seconds", "kind": "pivot"},
  {"name": "notify",          "action": {"function": "cafe.send_notification"}, "kind": "retriable"}
]}$$), 1, 'saga_define returns version 1');
SELECT is(once.saga_define('cafe_order', $${"steps": [
  {"name": "reserve_stock",   "action": {"topic": "stock.reserve"},   "compensation": {"topic": "stock.release", "max_attempts": 2},  "timeout": "30 seconds", "max_attempts": 3},
  {"name": "capture_payment", "action": {"topic": "payment.capture"}, "compensation": {"topic": "payment.refund"}, "timeout": "30 seconds", "kind": "pivot"},
  {"name": "notify",          "action": {"function": "cafe.send_notification"}, "kind": "retriable"}
]}$$), 1, 'defining the same definition again keeps the version');
SELECT is(once.saga_define('remote_notify', $${"steps": [
  {"name": "reserve_stock",   "action": {"topic": "stock.reserve"},   "compensation": {"topic": "stock.release"}},
  {"name": "capture_payment", "action": {"topic": "payment.capture"}, "compensation": {"topic": "payment.refund"}, "kind": "pivot"},
  {"name": "notify",          "action": {"topic": "notify.send"}, "kind": "retriable"}
]}$$), 1, 'a second saga');

SELECT throws_ok($$SELECT once.saga_define('bad', '{"steps": []}')$$, 'ON401', NULL, 'empty steps: ON401');
SELECT throws_like($$SELECT once.saga_define('bad', '{"steps": [{"name": "a", "action": {"topic": "x"}}, {"name": "b"}]}')$$,
    '%step 2 ("b"): "action" is required%', 'the error names the step and the field');
SELECT throws_like($$SELECT once.saga_define('bad', '{"steps": [{"name": "a", "action": {"topic": "x"}, "timeout": "soon"}]}')$$,
    '%step 1 ("a"): "timeout"%', 'a bad timeout names the step');
SELECT throws_like($$SELECT once.saga_define('bad', '{"steps": [{"name": "a", "action": {"function": "cafe.missing"}}]}')$$,
    '%step 1 (a): function cafe.missing(text, jsonb) does not exist%', 'a missing local function is caught at define time');
SELECT throws_like($$SELECT once.saga_define('bad', '{"steps": [{"name": "n", "action": {"topic": "x"}, "kind": "retriable"}, {"name": "c", "action": {"topic": "y"}}]}')$$,
    '%step 2 ("c"): a compensable step must come before%', 'kinds must be ordered compensable, pivot, retriable');
SELECT throws_ok($$SELECT once.saga_define('Bad Name', '{"steps": [{"name": "a", "action": {"topic": "x"}}]}')$$,
    'ON401', NULL, 'a bad saga name: ON401');
SELECT throws_ok($$SELECT once.saga_define('bad', NULL)$$, 'ON401', NULL, 'NULL definition: ON401');
SELECT throws_ok($$SELECT once.saga_define(NULL, '{}')$$, '22023', NULL, 'NULL name: 22023');
SELECT is((SELECT count(*) FROM once.saga_definitions WHERE name = 'bad'), 0::bigint, 'nothing was stored for bad definitions');

-- versions: a changed definition is a new version; running sagas keep theirs
SELECT once.saga_define('versioned', '{"steps": [{"name": "a", "action": {"topic": "v.a"}}, {"name": "b", "action": {"topic": "v.b"}}]}');
SELECT once.saga_start('versioned', 'v-old', '{}');
SELECT is(once.saga_define('versioned', '{"steps": [{"name": "a", "action": {"topic": "v.a"}}, {"name": "c", "action": {"topic": "v.c"}}]}'),
    2, 'a changed definition gets version 2');
SELECT once.saga_start('versioned', 'v-new', '{}');
SELECT once.saga_reply('v-old', 'a', 'succeeded');
SELECT once.saga_reply('v-new', 'a', 'succeeded');
SELECT is((SELECT array_agg(version || ':' || step ORDER BY saga_id) FROM once.sagas WHERE name = 'versioned'),
    ARRAY['2:c', '1:b'], 'the running saga keeps version 1 (next step b), a new one uses version 2 (next step c)');

-- ----------------------------------------------------------------------------- saga_start
SELECT is(once.saga_start('cafe_order', 'happy', '{"item": "latte", "qty": 2}'), 'happy', 'saga_start returns the id');
SELECT is(pg_temp.sent_keys('happy'), ARRAY['happy:reserve_stock#1'], 'the first command is sent in the same transaction');
SELECT is((SELECT headers FROM pg_temp.sent WHERE payload->>'saga_id' = 'happy'),
    '{"saga": "cafe_order", "attempt": "1", "reply_to": "saga.cafe_order.reply", "compensate": "false", "idempotency_key": "happy:reserve_stock"}'::jsonb,
    'command headers: idempotency key, saga, reply_to');
SELECT is((SELECT payload FROM pg_temp.sent WHERE payload->>'saga_id' = 'happy'),
    '{"saga_id": "happy", "step": "reserve_stock", "data": {"item": "latte", "qty": 2}, "saga": "cafe_order"}'::jsonb,
    'command payload: saga_id, step, data, saga (the definition, 0.3)');
SELECT is((SELECT topic FROM pg_temp.sent WHERE payload->>'saga_id' = 'happy'), 'stock.reserve', 'sent to the action topic');
SELECT is(once.saga_start('cafe_order', 'happy', '{"qty": 2, "item": "latte"}'), 'happy', 'the same start again returns the same saga');
SELECT is(pg_temp.sent_keys('happy'), ARRAY['happy:reserve_stock#1'], '... and sends nothing again');
SELECT throws_ok($$SELECT once.saga_start('cafe_order', 'happy', '{"item": "mocha"}')$$, 'ON404', NULL,
    'the same saga id with other input: ON404');
SELECT throws_ok($$SELECT once.saga_start('nope', 'x1', '{}')$$, 'ON402', NULL, 'an unknown saga name: ON402');
SELECT throws_ok($$SELECT once.saga_start('cafe_order', '', '{}')$$, '22023', NULL, 'an empty saga id: 22023');
SELECT throws_ok($$SELECT once.saga_start('cafe_order', 'x2', '[1]')$$, '22023', NULL, 'input must be an object');
SELECT isnt((SELECT deadline FROM once.sagas WHERE saga_id = 'happy'), NULL, 'a running saga has a deadline');

-- ------------------------------------------------------------------------------ happy path
SELECT is(once.saga_reply('happy', 'reserve_stock', 'succeeded', '{"reservation_id": "r-1"}', 'm-1'), 'applied', 'stock reserved');
SELECT is(pg_temp.sent_keys('happy'), ARRAY['happy:reserve_stock#1', 'happy:capture_payment#1'], 'payment is captured next');
SELECT is((SELECT payload->'data'->>'reservation_id' FROM pg_temp.sent WHERE payload->>'step' = 'capture_payment' AND payload->>'saga_id' = 'happy'),
    'r-1', 'step output is merged into the data of later commands');
SELECT is(once.saga_reply('happy', 'capture_payment', 'succeeded', '{"payment_id": "p-1"}', 'm-2'), 'applied', 'payment captured');
SELECT is(once.saga_tick(), 1, 'saga_tick runs the local notify step');
SELECT is(pg_temp.status('happy'), 'completed', 'happy path: completed');
SELECT ok((SELECT deadline IS NULL AND finished_at IS NOT NULL FROM once.sagas WHERE saga_id = 'happy'), 'a completed saga has no deadline');
SELECT is((SELECT data FROM once.sagas WHERE saga_id = 'happy'),
    '{"item": "latte", "qty": 2, "reservation_id": "r-1", "payment_id": "p-1", "notified_at": "now"}'::jsonb, 'all outputs merged');
SELECT cmp_ok((SELECT count(*) FROM once.saga_history WHERE saga_id = 'happy'), '>=', 4::bigint, 'every transition is in the history');

-- --------------------------------------------------------- scenario A: payment fails -> release
SELECT once.saga_start('cafe_order', 'a', '{"item": "latte"}');
SELECT once.saga_reply('a', 'reserve_stock', 'succeeded', '{"reservation_id": "r-a"}', 'a-1');
SELECT is(once.saga_reply('a', 'capture_payment', 'failed', '{"error": "card declined"}', 'a-2'), 'applied', 'A: payment failed');
SELECT is(pg_temp.status('a'), 'compensating', 'A: compensating');
SELECT is(pg_temp.sent_keys('a'), ARRAY['a:reserve_stock#1', 'a:capture_payment#1', 'a:reserve_stock:compensate#1'],
    'A: the stock is released with key <saga>:<step>:compensate');
SELECT is((SELECT topic FROM pg_temp.sent WHERE headers->>'idempotency_key' = 'a:reserve_stock:compensate'), 'stock.release', 'A: to the compensation topic');
SELECT is(once.saga_reply('a', 'reserve_stock', 'compensated', NULL, 'a-3'), 'applied', 'A: stock released');
SELECT is(pg_temp.status('a'), 'compensated', 'A: compensated');
SELECT alike((SELECT last_error FROM once.sagas WHERE saga_id = 'a'), '%card declined%', 'A: the reason is kept');

-- failure before any completed step: nothing to undo
SELECT once.saga_start('cafe_order', 'soldout', '{"item": "cake"}');
SELECT once.saga_reply('soldout', 'reserve_stock', 'failed', '{"error": "sold out"}', 's-1');
SELECT is(pg_temp.status('soldout'), 'compensated', 'sold out: compensated with nothing to undo');
SELECT is(pg_temp.sent_keys('soldout'), ARRAY['soldout:reserve_stock#1'], 'sold out: no compensation sent');

-- ------------------------------------------------- scenario B: notification outage -> retried
UPDATE cafe.notify_outage SET down = true;
SELECT once.saga_start('cafe_order', 'b', '{"item": "latte"}');
SELECT once.saga_reply('b', 'reserve_stock', 'succeeded', NULL, 'b-1');
SELECT once.saga_reply('b', 'capture_payment', 'succeeded', '{"payment_id": "p-b"}', 'b-2');
SELECT once.saga_tick();
SELECT is(pg_temp.status('b'), 'running', 'B: the order stays paid (running) while notify fails');
SELECT ok((SELECT deadline > now() FROM once.sagas WHERE saga_id = 'b'), 'B: the retry waits for its backoff');
SELECT alike((SELECT last_error FROM once.sagas WHERE saga_id = 'b'), '%notification service unavailable%', 'B: the error is visible');
SELECT is((SELECT count(*) FROM cafe.notified WHERE saga_id LIKE 'attempted%'), 0::bigint, 'B: the failed attempt rolled back its own work');
SELECT pg_temp.due('b');
SELECT once.saga_tick();
SELECT is((SELECT attempts FROM once.sagas WHERE saga_id = 'b'), 2, 'B: retried (attempt 2)');
UPDATE cafe.notify_outage SET down = false;
SELECT pg_temp.due('b');
SELECT once.saga_tick();
SELECT is(pg_temp.status('b'), 'completed', 'B: notification sent after the outage: completed');
SELECT is(pg_temp.sent_keys('b'), ARRAY['b:reserve_stock#1', 'b:capture_payment#1'], 'B: never compensated');

-- ------------------------------------------------------------ scenario C: duplicate replies
SELECT once.saga_start('cafe_order', 'c', '{"item": "latte"}');
SELECT once.saga_reply('c', 'reserve_stock', 'succeeded', NULL, 'c-1');
SELECT is(once.saga_reply('c', 'reserve_stock', 'succeeded', NULL, 'c-1'), 'duplicate', 'C: the same message id again: duplicate');
SELECT is(once.saga_reply('c', 'reserve_stock', 'succeeded', NULL, 'c-1b'), 'duplicate', 'C: the same step/outcome again: duplicate');
SELECT is(once.saga_reply('c', 'reserve_stock', 'succeeded'), 'duplicate', 'C: ... also without a message id');
SELECT is(pg_temp.sent_keys('c'), ARRAY['c:reserve_stock#1', 'c:capture_payment#1'], 'C: payment requested once');
SELECT is(pg_temp.status('c'), 'running', 'C: still running');

-- replies through the inbox: the built-in handler
SELECT once.subscribe('saga.cafe_order.reply', 'once.saga_reply_handler(once.inbound)');
SELECT is(once.deliver('relay-x', 'reply-1', 'saga.cafe_order.reply',
    '{"saga_id": "c", "step": "capture_payment", "outcome": "succeeded", "output": {"payment_id": "p-c"}}', '{}'),
    'processed', 'a reply message is delivered to the saga through the inbox');
SELECT is((SELECT step || ' ' || (data->>'payment_id') FROM once.sagas WHERE saga_id = 'c'), 'notify p-c', '... and applied');
SELECT is(once.deliver('relay-x', 'reply-1', 'saga.cafe_order.reply',
    '{"saga_id": "c", "step": "capture_payment", "outcome": "succeeded"}', '{}'),
    'duplicate', 'a redelivered reply is dropped by the inbox');
SELECT throws_ok($$SELECT once.deliver('relay-x', 'reply-2', 'saga.cafe_order.reply', '{"saga_id": "c"}', '{}')$$,
    'ON406', NULL, 'a malformed reply message: ON406');

-- -------------------------------------------------------- scenario D: out-of-order reply
SELECT once.saga_start('remote_notify', 'd', '{"item": "latte"}');
SELECT once.saga_reply('d', 'reserve_stock', 'succeeded', NULL, 'd-1');
SELECT is(once.saga_reply('d', 'notify', 'succeeded', NULL, 'd-2'), 'rejected', 'D: notify succeeded while payment is pending: rejected');
SELECT is(pg_temp.status('d'), 'failed', 'D: the saga stops in failed');
SELECT alike((SELECT last_error FROM once.sagas WHERE saga_id = 'd'), '%capture_payment is pending%', 'D: with the reason');
SELECT is((SELECT deadline FROM once.sagas WHERE saga_id = 'd'), NULL, 'D: a failed saga waits for a person, not a timer');
SELECT is(once.saga_retry('d'), 'running', 'D: saga_retry resumes it');
SELECT is(pg_temp.sent_keys('d'), ARRAY['d:reserve_stock#1', 'd:capture_payment#1', 'd:capture_payment#1'],
    'D: ... by resending the pending command with the same key');

-- ---------------------------------------------------------- timeouts: resend with the same key
SELECT once.saga_start('cafe_order', 't', '{"item": "latte"}');
SELECT pg_temp.due('t');
SELECT cmp_ok(once.saga_tick(), '>=', 1, 'a timed-out saga is handled by saga_tick');
SELECT is(pg_temp.sent_keys('t'), ARRAY['t:reserve_stock#1', 't:reserve_stock#2'], 'timeout: resent with the same idempotency key');
SELECT pg_temp.due('t');
SELECT once.saga_tick();
SELECT pg_temp.due('t');
SELECT once.saga_tick();
SELECT is(pg_temp.status('t'), 'compensating', 'after max_attempts the step counts as failed');
SELECT is((pg_temp.sent_keys('t'))[4], 't:reserve_stock:compensate#1', 'a timed-out step may have taken effect: it is compensated');

-- ------------------------------------------- late success for a step whose compensation began
SELECT once.saga_start('cafe_order', 'late', '{"item": "latte"}');
SELECT once.saga_reply('late', 'reserve_stock', 'succeeded', NULL, 'l-1');
SELECT once.saga_reply('late', 'capture_payment', 'failed', '{"error": "gateway timeout"}', 'l-2');
SELECT is(once.saga_reply('late', 'capture_payment', 'succeeded', '{"payment_id": "p-late"}', 'l-3'), 'late',
    'a late success after compensation began is accepted as late');
SELECT once.saga_reply('late', 'reserve_stock', 'compensated', NULL, 'l-4');
SELECT is((pg_temp.sent_keys('late'))[4], 'late:capture_payment:compensate#1', 'the late step is compensated too (refund)');
SELECT is((SELECT payload->'data'->>'payment_id' FROM pg_temp.sent WHERE headers->>'idempotency_key' = 'late:capture_payment:compensate'),
    'p-late', 'the refund carries the late payment id');
SELECT once.saga_reply('late', 'capture_payment', 'compensated', NULL, 'l-5');
SELECT is(pg_temp.status('late'), 'compensated', 'late: compensated');

-- --------------------------------------- compensation keeps failing -> failed -> saga_retry
SELECT once.saga_start('cafe_order', 'cf', '{"item": "latte"}');
SELECT once.saga_reply('cf', 'reserve_stock', 'succeeded', NULL, 'cf-1');
SELECT once.saga_reply('cf', 'capture_payment', 'failed', NULL, 'cf-2');
SELECT is(once.saga_reply('cf', 'reserve_stock', 'compensation_failed', '{"error": "stock db down"}', 'cf-3'), 'applied', 'compensation failed once');
SELECT pg_temp.due('cf');
SELECT once.saga_tick();
SELECT is((pg_temp.sent_keys('cf'))[4], 'cf:reserve_stock:compensate#2', 'the compensation is retried with the same key');
SELECT once.saga_reply('cf', 'reserve_stock', 'compensation_failed', '{"error": "stock db down"}', 'cf-4');
SELECT is(pg_temp.status('cf'), 'failed', 'a compensation that keeps failing: failed');
SELECT alike((SELECT last_error FROM once.sagas WHERE saga_id = 'cf'), '%kept failing%stock db down%', '... with the reason');
SELECT is(once.saga_retry('cf'), 'compensating', 'saga_retry resumes the compensation');
SELECT once.saga_reply('cf', 'reserve_stock', 'compensated', NULL, 'cf-5');
SELECT is(pg_temp.status('cf'), 'compensated', 'compensated after the retry');
SELECT throws_ok($$SELECT once.saga_retry('cf')$$, 'ON405', NULL, 'retry of a saga that is not failed: ON405');

-- ------------------------------------------------------------------------------------ abort
SELECT once.saga_start('cafe_order', 'ab', '{"item": "latte"}');
SELECT once.saga_reply('ab', 'reserve_stock', 'succeeded', NULL, 'ab-1');
SELECT is(once.saga_abort('ab', 'customer cancelled'), 'compensating', 'saga_abort starts compensation');
SELECT is((pg_temp.sent_keys('ab'))[3], 'ab:capture_payment:compensate#1', 'the in-flight payment (outcome unknown) is undone first');
SELECT throws_ok($$SELECT once.saga_abort('happy', 'x')$$, 'ON405', NULL, 'a finished saga cannot be aborted');

-- ------------------------------------------------------------------------------- bad input
SELECT throws_ok($$SELECT once.saga_reply('nobody', 'reserve_stock', 'succeeded')$$, 'ON402', NULL, 'unknown saga id: ON402');
SELECT throws_ok($$SELECT once.saga_reply('c', 'ship', 'succeeded')$$, 'ON403', NULL, 'unknown step: ON403');
SELECT throws_ok($$SELECT once.saga_reply('c', 'capture_payment', 'ok')$$, 'ON406', NULL, 'bad outcome: ON406');
SELECT throws_ok($$SELECT once.saga_reply('c', NULL, 'succeeded')$$, 'ON406', NULL, 'NULL step: ON406');
SELECT throws_ok($$SELECT once.saga_reply(NULL, 'x', 'succeeded')$$, '22023', NULL, 'NULL saga id: 22023');
SELECT throws_ok($$SELECT once.saga_tick(0)$$, '22023', NULL, 'saga_tick(0): 22023');
SELECT throws_ok($$SELECT once.saga_diagram('nope')$$, 'ON402', NULL, 'diagram of an unknown saga: ON402');
SELECT alike(once.saga_diagram('cafe_order'), '%stateDiagram-v2%capture_payment --> undo_reserve_stock : failed%', 'saga_diagram is Mermaid');

-- ------------------------------------------------------------------ invariants and privileges
SELECT is((SELECT count(*) FROM once.sagas WHERE status IN ('running', 'compensating') AND deadline IS NULL), 0::bigint,
    'every non-final saga has a deadline');
SELECT is((SELECT count(*) FROM once.sagas WHERE status = 'failed' AND last_error IS NULL), 0::bigint,
    'every failed saga has a reason');
SELECT ok(NOT has_function_privilege('public', 'once.saga_start(text, text, jsonb)', 'EXECUTE'), 'saga_start is not open to PUBLIC');
SELECT ok(has_function_privilege('once_producer', 'once.saga_start(text, text, jsonb)', 'EXECUTE')
      AND has_function_privilege('once_consumer', 'once.saga_reply(text, text, text, jsonb, text, text)', 'EXECUTE')
      AND has_function_privilege('once_relay', 'once.saga_tick(integer)', 'EXECUTE')
      AND has_function_privilege('once_admin', 'once.saga_define(text, jsonb, regrole)', 'EXECUTE')
      AND NOT has_function_privilege('once_producer', 'once.saga_define(text, jsonb, regrole)', 'EXECUTE'),
    'roles: define/retry/abort admin, start producer, reply consumer, tick relay');

-- roles at work: producer starts, consumer replies, relay ticks (local steps run as the relay)
CREATE ROLE saga_app LOGIN IN ROLE once_producer;
CREATE ROLE saga_replier LOGIN IN ROLE once_consumer;
CREATE ROLE saga_ticker LOGIN IN ROLE once_relay;
GRANT USAGE ON SCHEMA cafe TO saga_ticker;
GRANT SELECT ON cafe.notify_outage TO saga_ticker;
GRANT INSERT ON cafe.notified TO saga_ticker;
SET ROLE saga_app;
SELECT is(once.saga_start('cafe_order', 'roles', '{"item": "latte"}'), 'roles', 'once_producer may start a saga');
SELECT throws_ok($$SELECT once.saga_reply('roles', 'reserve_stock', 'succeeded')$$, '42501', NULL, '... but not reply');
RESET ROLE;
SET ROLE saga_replier;
SELECT is(once.saga_reply('roles', 'reserve_stock', 'succeeded', NULL, 'ro-1'), 'applied', 'once_consumer may reply');
SELECT is(once.saga_reply('roles', 'capture_payment', 'succeeded', NULL, 'ro-2'), 'applied', '...');
SELECT throws_ok($$SELECT * FROM once.saga_instances$$, '42501', NULL, '... but not read the tables');
RESET ROLE;
SET ROLE saga_ticker;
SELECT is(once.saga_tick(), 1, 'once_relay may tick: the local step runs with the ticker''s rights');
RESET ROLE;
SELECT is(pg_temp.status('roles'), 'completed', 'roles: completed');

-- ------------------------------------------------------------------------------------ purge
UPDATE once.saga_instances SET finished_at = now() - interval '8 days' WHERE saga_id = 'happy';
SELECT is(once.purge_sagas(100), 1::bigint, 'finished sagas past retention are purged');
SELECT is((SELECT count(*) FROM once.saga_history WHERE saga_id = 'happy'), 0::bigint, '... with their history');

SELECT * FROM finish();
ROLLBACK;
