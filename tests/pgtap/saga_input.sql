-- The C++ saga entry points (saga_start, saga_reply, saga_reply_handler, _saga_apply) check
-- their input as the PL/pgSQL functions they replaced did: the same SQLSTATEs and messages at
-- every boundary, and nothing stored when they refuse.
BEGIN;
SELECT plan(23);

SELECT once.saga_define('two', $${"steps": [
  {"name": "reserve", "action": {"topic": "stock.reserve"}, "compensation": {"topic": "stock.release"}},
  {"name": "pay",     "action": {"topic": "payment.capture"}, "kind": "pivot"}
]}$$);
CREATE FUNCTION pg_temp.sagas() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM once.saga_instances $$;

-- ------------------------------------------------------------------------------ saga ids
SELECT is(once.saga_start('two', repeat('x', 200)), repeat('x', 200), 'a saga id of 200 characters is accepted');
SELECT is(once.saga_start('two', repeat('é', 127)), repeat('é', 127), '127 two-byte characters (254 bytes) are accepted');
SELECT throws_ok($$SELECT once.saga_start('two', repeat('é', 128))$$, '22023', 'invalid saga id',
    '256 bytes: 22023 (the id is the outbox ordering key, at most 255 bytes; 0.1 failed later, at the send)');
SELECT throws_ok($$SELECT once.saga_start('two', repeat('x', 201))$$, '22023', 'invalid saga id', '201 characters: 22023');
SELECT throws_ok($$SELECT once.saga_start('two', '')$$, '22023', 'invalid saga id', 'an empty saga id: 22023');
SELECT throws_ok($$SELECT once.saga_start('two', NULL)$$, '22023', 'invalid saga id', 'a NULL saga id: 22023');
SELECT throws_ok($$SELECT once.saga_start('two', E'a\nb')$$, '22023', 'invalid saga id', 'a control character: 22023');
SELECT throws_like($$SELECT once.saga_reply(E'a\tb', 'reserve', 'succeeded')$$, '%invalid saga id%', 'saga_reply checks the id too');
SELECT is(pg_temp.sagas(), 2::bigint, 'nothing stored for a refused id');

-- ------------------------------------------------------------------------------ saga_start
SELECT throws_ok($$SELECT once.saga_start('two', 'arr', '[1, 2]')$$, '22023', 'saga input must be a JSON object',
    'an array as input: 22023');
SELECT throws_ok($$SELECT once.saga_start('nope', 'n1')$$, 'ON402', 'saga definition not found', 'an unknown saga: ON402');
SELECT throws_ok($$SELECT once.saga_start(NULL, 'n2')$$, 'ON402', 'saga definition not found', 'a NULL saga name: ON402');
SELECT is(once.saga_start('two', 'o1', NULL), 'o1', 'NULL input is {}');
SELECT is((SELECT data FROM once.sagas WHERE saga_id = 'o1'), '{}'::jsonb, '... stored as {}');
SELECT is(once.saga_start('two', 'o1', '{}'), 'o1', 'the same start again is a no-op');
SELECT throws_ok($$SELECT once.saga_start('two', 'o1', '{"other": true}')$$, 'ON404',
    'saga id already used with another saga or input', 'another input for the same id: ON404');

-- ------------------------------------------------------------------------------ saga_reply
SELECT is(once.saga_reply('o1', 'reserve', 'failed', '{"error": {"code": 42}}', 'r-1'), 'applied', 'a failure whose error is an object');
SELECT alike((SELECT last_error FROM once.sagas WHERE saga_id = 'o1'), '%"code": 42%', '... keeps the object as the reason');
SELECT is(once.saga_reply('o1', 'reserve', 'failed', NULL, 'r-1'), 'duplicate', 'the same message id again: duplicate');
SELECT is((SELECT count(*) FROM once.saga_history WHERE saga_id = 'o1' AND event = 'duplicate message ignored'), 1::bigint,
    '... recorded in the history');

-- --------------------------------------------------------------------- saga_reply_handler
SELECT once.subscribe('saga.two.reply', 'once.saga_reply_handler(once.inbound)');
SELECT once.saga_start('two', 'h1', '{"n": 1}');
SELECT is(once.deliver('relay', 'h-1', 'saga.two.reply',
    '{"saga_id": "h1", "step": "reserve", "outcome": "succeeded", "output": {"reservation": "r"}}', '{}'),
    'processed', 'a reply through the inbox handler');
SELECT is((SELECT step || ' ' || (data->>'reservation') FROM once.sagas WHERE saga_id = 'h1'), 'pay r', '... is applied with its output');
SELECT throws_ok($$SELECT once.deliver('relay', 'h-2', 'saga.two.reply', '{"saga_id": "h1", "step": "pay", "outcome": null}', '{}')$$,
    'ON406', 'malformed saga reply', 'a JSON null outcome: ON406');

SELECT * FROM finish();
ROLLBACK;
