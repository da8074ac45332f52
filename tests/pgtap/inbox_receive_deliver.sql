-- Inbox: once.receive and once.deliver — first time, duplicates, no handler, handler errors,
-- several handlers, text and uuid ids, and bad input with its own SQLSTATEs.
BEGIN;
SELECT plan(47);

CREATE TABLE effects (handler text, source text, message_id text, topic text, payload jsonb, headers jsonb);
CREATE FUNCTION on_order(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO effects VALUES ('on_order', msg.source, msg.message_id, msg.topic, msg.payload, msg.headers);
END $$;
CREATE FUNCTION audit_all(msg once.inbound) RETURNS integer LANGUAGE sql AS $$
    INSERT INTO effects VALUES ('audit_all', msg.source, msg.message_id, msg.topic, msg.payload, msg.headers)
    RETURNING 1
$$;
CREATE FUNCTION refuse(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO effects VALUES ('refuse', msg.source, msg.message_id, msg.topic, msg.payload, msg.headers);
    RAISE EXCEPTION 'payment % refused', msg.message_id USING ERRCODE = 'P0042';
END $$;

-- receive -----------------------------------------------------------------------------------
SELECT is(once.receive('stripe', 'evt_1NqX2k2eZvKYlo2C'), true, 'receive: true the first time');
SELECT is(once.receive('stripe', 'evt_1NqX2k2eZvKYlo2C'), false, 'receive: false for a duplicate');
SELECT is(once.receive('paypal', 'evt_1NqX2k2eZvKYlo2C'), true, 'receive: the same id from another source is another message');
SELECT is(once.receive('stripe', 'EVT_1NQX2K2EZVKYLO2C', 'invoice.paid'), true, 'receive: ids are compared as exact text');
SELECT is((SELECT topic FROM once.inbox WHERE message_id = 'EVT_1NQX2K2EZVKYLO2C'), 'invoice.paid',
          'receive: the topic is stored with the id');
SELECT is(once.receive('kafka', repeat('k', 255)), true, 'receive: a 255-byte id is fine');
SELECT is(once.receive('kafka', 'orders-3:184467'), true, 'receive: any printable text is an id');

SELECT throws_ok($$SELECT once.receive(NULL, 'm')$$, 'ON302', 'inbox source must not be NULL', 'receive: NULL source');
SELECT throws_ok($$SELECT once.receive('', 'm')$$, 'ON302', 'inbox source must not be empty', 'receive: empty source');
SELECT throws_ok($$SELECT once.receive(repeat('s', 256), 'm')$$, 'ON302', 'inbox source is too long', 'receive: source over 255 bytes');
SELECT throws_ok($$SELECT once.receive('s', NULL)$$, 'ON303', 'message id must not be NULL', 'receive: NULL id');
SELECT throws_ok($$SELECT once.receive('s', '')$$, 'ON303', 'message id must not be empty', 'receive: empty id');
SELECT throws_ok($$SELECT once.receive('s', repeat('k', 256))$$, 'ON303', 'message id is too long', 'receive: id over 255 bytes');
SELECT throws_ok($$SELECT once.receive('s', E'a\nb')$$, 'ON303', 'message id contains a control character', 'receive: control character in id');
SELECT throws_ok($$SELECT once.receive('s', 'm', 'order..x')$$, 'ON201', NULL, 'receive: a malformed topic');
SELECT is((SELECT count(*) FROM once.inbox WHERE source IN ('s', '') OR source LIKE 'sss%'), 0::bigint,
          'receive: bad input records nothing');

-- deliver -----------------------------------------------------------------------------------
SELECT is(once.deliver('orders-db', 'm1', 'order.created', '{"id": 1}'), 'no_handler',
          'deliver: no_handler without a subscription');
SELECT is((SELECT count(*) FROM once.inbox WHERE source = 'orders-db'), 0::bigint,
          'deliver: a message without a handler is not recorded');

SELECT is(once.subscribe('order.*', 'on_order(once.inbound)'), true, 'subscribe in the same transaction');
SELECT is(once.deliver('orders-db', 'm1', 'order.created', '{"id": 1}', '{"trace": "t1"}'), 'processed',
          'deliver: processed once a handler is subscribed (cache refreshed in the same transaction)');
SELECT results_eq($$SELECT handler, source, message_id, topic, payload, headers FROM effects$$,
                  $$VALUES ('on_order', 'orders-db', 'm1', 'order.created', '{"id": 1}'::jsonb, '{"trace": "t1"}'::jsonb)$$,
                  'deliver: the handler got the whole message');
SELECT is(once.deliver('orders-db', 'm1', 'order.created', '{"id": 1}'), 'duplicate', 'deliver: duplicate the second time');
SELECT is((SELECT count(*) FROM effects), 1::bigint, 'deliver: a duplicate does not run the handler');
SELECT is(once.receive('orders-db', 'm1'), false, 'receive and deliver share the record');
SELECT is(once.deliver('orders-db', 'm2', 'order.created.v2', '{}'), 'no_handler', 'deliver: order.* does not match order.created.v2');
SELECT is(once.deliver('orders-db', 'm3', 'order', '{}'), 'no_handler', 'deliver: order.* does not match order');

SELECT once.subscribe('order.>', 'audit_all(once.inbound)');
SELECT once.subscribe('>', 'on_order(once.inbound)');
DELETE FROM effects;
SELECT is(once.deliver('orders-db', 'm4', 'order.created', NULL), 'processed', 'deliver: NULL payload is passed on');
SELECT results_eq($$SELECT handler FROM effects ORDER BY handler$$, ARRAY['audit_all', 'on_order'],
                  'deliver: every matching handler ran, a handler matched twice ran once');
SELECT is(once.deliver('orders-db', 'm5', 'order.created.v2', '{}'), 'processed', 'deliver: order.> matches deeper topics');

-- uuid ids
SELECT is(once.deliver('orders-db', '0190F1E2-7A3B-7C4D-8E5F-1A2B3C4D5E6F'::uuid, 'order.paid', '{}'), 'processed',
          'deliver(uuid): processed');
SELECT is(once.deliver('orders-db', '0190f1e2-7a3b-7c4d-8e5f-1a2b3c4d5e6f', 'order.paid', '{}'), 'duplicate',
          'deliver(uuid) stores the canonical text form, so the text overload sees a duplicate');
SELECT throws_ok($$SELECT once.deliver('orders-db', NULL::uuid, 'order.paid', '{}')$$, 'ON303', NULL, 'deliver(uuid): NULL id');

-- a handler error reaches the caller with its SQLSTATE, nothing is recorded
SELECT once.subscribe('payment.*', 'refuse(once.inbound)');
DELETE FROM effects;
SELECT throws_ok($$SELECT once.deliver('pay', 'p1', 'payment.captured', '{}')$$, 'P0042', 'payment p1 refused',
                 'deliver: the handler''s error and SQLSTATE reach the caller');
SELECT is((SELECT count(*) FROM once.inbox WHERE source = 'pay'), 0::bigint, 'deliver: a failed handler leaves no inbox record');
SELECT is((SELECT count(*) FROM effects), 0::bigint, 'deliver: a failed handler''s effects roll back');
SELECT throws_ok($$SELECT once.deliver('pay', 'p1', 'payment.captured', '{}')$$, 'P0042', NULL,
                 'deliver: the failed message runs again on redelivery');

-- big (TOASTed) payloads from a table reach the handler intact
CREATE TABLE big_messages (id text, payload jsonb, headers jsonb);
INSERT INTO big_messages
SELECT 'big-' || i, jsonb_build_object('blob', string_agg(md5(i::text || g::text), '')), jsonb_build_object('n', i)
  FROM generate_series(1, 2) i, generate_series(1, 40000) g GROUP BY i;
DELETE FROM effects;
SELECT results_eq($$SELECT once.deliver('bulk', id, 'order.bulk', payload, headers) FROM big_messages ORDER BY id$$,
                  ARRAY['processed', 'processed'], 'deliver: TOASTed payloads from a table');
SELECT is((SELECT count(*) FROM effects e JOIN big_messages b ON b.id = e.message_id
            WHERE e.payload = b.payload AND e.headers = b.headers AND e.handler = 'on_order'), 2::bigint,
          'deliver: the handler got the whole TOASTed payload');

-- bad input
SELECT throws_ok($$SELECT once.deliver('s', 42, 'order.created', '{}')$$, '42883', NULL, 'deliver: an integer id is no message id');
SELECT throws_ok($$SELECT once.receive(repeat('s', 1000000), 'm')$$, 'ON302', 'inbox source is too long', 'receive: a 1 MB source');
SELECT throws_ok($$SELECT once.deliver(NULL, 'x', 'order.created', '{}')$$, 'ON302', NULL, 'deliver: NULL source');
SELECT throws_ok($$SELECT once.deliver('', 'x', 'order.created', '{}')$$, 'ON302', NULL, 'deliver: empty source');
SELECT throws_ok($$SELECT once.deliver('s', ''::text, 'order.created', '{}')$$, 'ON303', NULL, 'deliver: empty id');
SELECT throws_ok($$SELECT once.deliver('s', repeat('x', 256), 'order.created', '{}')$$, 'ON303', NULL, 'deliver: id over 255 bytes');
SELECT throws_ok($$SELECT once.deliver('s', 'x', NULL, '{}')$$, 'ON201', 'topic must not be NULL', 'deliver: NULL topic');
SELECT throws_ok($$SELECT once.deliver('s', 'x', 'order.*', '{}')$$, 'ON201', NULL, 'deliver: a pattern is not a topic');
SELECT is((SELECT count(*) FROM once.inbox WHERE source = 's'), 0::bigint, 'deliver: bad input records nothing');

SELECT * FROM finish();
ROLLBACK;
