-- Inbox subscriptions: pattern rules, handler signature checks, unsubscribe, a dropped handler,
-- and the per-backend subscription cache following every change.
BEGIN;
SELECT plan(24);

CREATE TABLE effects (handler text, message_id text);
CREATE FUNCTION h1(msg once.inbound) RETURNS void LANGUAGE sql AS $$ INSERT INTO effects VALUES ('h1', msg.message_id) $$;
CREATE FUNCTION h2(msg once.inbound) RETURNS void LANGUAGE sql AS $$ INSERT INTO effects VALUES ('h2', msg.message_id) $$;
CREATE FUNCTION two_args(msg once.inbound, extra int) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION wrong_type(msg jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION many(msg once.inbound) RETURNS SETOF int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE PROCEDURE proc(msg once.inbound) LANGUAGE sql AS $$ SELECT $$;

SELECT is(once.subscribe('order.*', 'h1(once.inbound)'), true, 'subscribe returns true for a new subscription');
SELECT is(once.subscribe('order.*', 'h1(once.inbound)'), false, 'subscribing twice is a no-op');
SELECT is((SELECT count(*) FROM once.inbox_subscriptions), 1::bigint, 'one subscription row');

-- patterns (NATS semantics, shared with the relay)
SELECT throws_ok($$SELECT once.subscribe('order..x', 'h1(once.inbound)')$$, 'ON301', 'topic pattern has an empty token', 'empty token');
SELECT throws_ok($$SELECT once.subscribe('order.>.x', 'h1(once.inbound)')$$, 'ON301', 'topic pattern has ''>'' before its last token', '> must be last');
SELECT throws_ok($$SELECT once.subscribe('order.cr*', 'h1(once.inbound)')$$, 'ON301', NULL, 'partial wildcards are not wildcards');
SELECT throws_ok($$SELECT once.subscribe('', 'h1(once.inbound)')$$, 'ON301', 'topic pattern must not be empty', 'empty pattern');
SELECT throws_ok($$SELECT once.subscribe(NULL, 'h1(once.inbound)')$$, 'ON301', 'topic pattern must not be NULL', 'NULL pattern');
SELECT throws_ok($$SELECT once.subscribe(repeat('a', 256), 'h1(once.inbound)')$$, 'ON301', 'topic pattern is too long', 'pattern over 255 bytes');

-- handler signature
SELECT throws_ok($$SELECT once.subscribe('x', 'two_args(once.inbound, int)')$$, 'ON304', 'inbox handler has the wrong signature', 'two arguments');
SELECT throws_ok($$SELECT once.subscribe('x', 'wrong_type(jsonb)')$$, 'ON304', 'inbox handler has the wrong signature', 'wrong argument type');
SELECT throws_ok($$SELECT once.subscribe('x', 'many(once.inbound)')$$, 'ON304', 'inbox handler must not return a set', 'set-returning');
SELECT throws_ok($$SELECT once.subscribe('x', 'proc(once.inbound)')$$, 'ON304', 'inbox handler must be a plain function', 'a procedure');
SELECT throws_ok($$SELECT once.subscribe('x', 0::oid::regprocedure)$$, 'ON304', 'inbox handler does not exist', 'an oid that is no function');
SELECT throws_ok($$SELECT once.subscribe('x', NULL)$$, 'ON304', 'inbox handler must not be NULL', 'NULL handler');
SELECT throws_ok($$SELECT once.subscribe('x', 'no_such_function(once.inbound)')$$, '42883', NULL,
                 'a function name that does not exist fails in the regprocedure cast (undefined_function)');
SELECT is((SELECT count(*) FROM once.inbox_subscriptions), 1::bigint, 'bad subscriptions record nothing');

-- unsubscribe and the cache
SELECT once.subscribe('order.*', 'h2(once.inbound)');
SELECT is(once.deliver('s', 'm1', 'order.created', '{}'), 'processed', 'two handlers');
SELECT results_eq($$SELECT handler FROM effects ORDER BY 1$$, ARRAY['h1', 'h2'], 'both ran');
SELECT is(once.unsubscribe('order.*', 'h1(once.inbound)'), 1, 'unsubscribe one handler');
DELETE FROM effects;
SELECT is(once.deliver('s', 'm2', 'order.created', '{}'), 'processed', 'still one handler');
SELECT results_eq($$SELECT handler FROM effects$$, ARRAY['h2'], 'only h2 ran after unsubscribing h1');
SELECT is(once.unsubscribe('order.*'), 1, 'unsubscribe every handler of a pattern');

-- a handler dropped after subscribing while event triggers do not fire (session_replication_role
-- = replica): the subscription stays behind (inbox_handler_dropped.sql has the usual case)
SELECT once.subscribe('gone.*', 'h1(once.inbound)');
SET LOCAL session_replication_role = replica;
DROP FUNCTION h1(once.inbound);
RESET session_replication_role;
SELECT throws_ok($$SELECT once.deliver('s', 'm3', 'gone.x', '{}')$$, 'ON305', 'an inbox handler no longer exists',
                 'a dropped handler is a clear error, the message is not recorded');

SELECT * FROM finish();
ROLLBACK;
