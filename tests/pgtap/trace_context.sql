-- W3C trace context: SET LOCAL once.traceparent once per transaction and every
-- message sent in it carries it; a message's own header wins; invalid values are refused;
-- once.deliver sets the context of the delivered message for its handlers; a saga passes the
-- context it was started under to each step command, with a new span id per command.
BEGIN;
SELECT plan(22);

CREATE FUNCTION pg_temp.headers(msg uuid) RETURNS jsonb LANGUAGE sql AS $$
    SELECT headers FROM once.outbox WHERE id = msg $$;

-- ---------------------------------------------------------------------------- producers
SELECT is(pg_temp.headers(once.send('t.plain', '{}')), NULL, 'a message sent without one has no headers');
SELECT is(current_setting('once.traceparent'), '', 'no trace context by default');

SET LOCAL once.traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
SET LOCAL once.tracestate = 'rojo=00f067aa0ba902b7';
SELECT is(pg_temp.headers(once.send('t.traced', '{}')),
          '{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "rojo=00f067aa0ba902b7"}'::jsonb,
          'a message sent in a traced transaction carries traceparent and tracestate');
SELECT is(pg_temp.headers(once.send('t.traced', '{}', headers => '{"x-tenant": "a"}')),
          '{"x-tenant": "a", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "rojo=00f067aa0ba902b7"}'::jsonb,
          '... beside its own headers');
SELECT is(pg_temp.headers(once.send('t.traced', '{}', headers => '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}')),
          '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}'::jsonb,
          'a message with its own traceparent keeps it (and takes no tracestate of another trace)');
SELECT is((SELECT count(*)::int FROM once.send_many('t.many', ARRAY['{}', '{}']::jsonb[]) i
             WHERE pg_temp.headers(i) ->> 'traceparent' = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), 2,
          'send_many: every message carries it');

SELECT throws_ok($$SET LOCAL once.traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'$$, '22023',
                 NULL, 'SET refuses an invalid traceparent (22023)');
SELECT throws_ok($$SET LOCAL once.traceparent = 'hello'$$, '22023', NULL, '... and text that is none');
SELECT throws_ok($$SET LOCAL once.tracestate = E'a=b\nc=d'$$, '22023', NULL, 'SET refuses an invalid tracestate');
SELECT throws_ok($$SELECT once.send('t.bad', '{}', headers => '{"traceparent": "00-abc"}')$$, 'ON217',
                 'invalid traceparent header', 'a message with an invalid traceparent header is refused (ON217)');
SELECT throws_ok($$SELECT once.send('t.bad', '{}', headers => '{"Traceparent": 42}')$$, 'ON217', NULL,
                 '... whatever the case of its name or the type of its value');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE topic = 't.bad'), 0, 'nothing was sent by the refused calls');

-- ------------------------------------------------------------------------------- inbox
CREATE TABLE public.seen (message_id text, traceparent text, tracestate text);
CREATE FUNCTION public.on_traced(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    INSERT INTO public.seen VALUES (msg.message_id, current_setting('once.traceparent'), current_setting('once.tracestate'));
    SELECT once.send('t.from_handler', '{}');
$$;
SELECT once.subscribe('in.*', 'public.on_traced(once.inbound)');
SELECT once.deliver('up', 'm1', 'in.x', '{}', '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "k=v"}');
SELECT is((SELECT traceparent || ' ' || tracestate FROM public.seen WHERE message_id = 'm1'),
          '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 k=v',
          'a handler runs under the delivered message''s trace context');
SELECT is((SELECT headers ->> 'traceparent' FROM once.outbox WHERE topic = 't.from_handler'),
          '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', '... so what it sends continues that trace');
SELECT is(current_setting('once.traceparent'), '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
          'after deliver the caller''s own context is back');
SELECT once.deliver('up', 'm2', 'in.x', '{}', '{"traceparent": "not one"}');
SELECT is((SELECT traceparent FROM public.seen WHERE message_id = 'm2'), '',
          'a message with an invalid (or no) traceparent runs its handlers without one, not under the caller''s');

-- -------------------------------------------------------------------------------- sagas
SELECT once.saga_define('traced', $${"steps": [
  {"name": "one", "action": {"topic": "saga.one"}, "compensation": {"topic": "saga.one.undo"}},
  {"name": "two", "action": {"topic": "saga.two"}}]}$$);
SELECT once.saga_start('traced', 's-1');
SELECT once.saga_reply('s-1', 'one', 'succeeded', NULL, 'r-1');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE topic IN ('saga.one', 'saga.two')), 2, 'the saga sent two step commands');
SELECT is((SELECT count(DISTINCT substr(headers ->> 'traceparent', 4, 32))::int FROM once.outbox
            WHERE topic IN ('saga.one', 'saga.two')), 1, '... both in one trace');
SELECT is((SELECT min(substr(headers ->> 'traceparent', 4, 32)) FROM once.outbox WHERE topic IN ('saga.one', 'saga.two')),
          '4bf92f3577b34da6a3ce929d0e0e4736', '... the trace the saga was started under');
SELECT is((SELECT count(DISTINCT substr(headers ->> 'traceparent', 37, 16))::int FROM once.outbox
            WHERE topic IN ('saga.one', 'saga.two')), 2, '... each command with a span id of its own');
SELECT ok((SELECT bool_and(substr(headers ->> 'traceparent', 37, 16) <> '00f067aa0ba902b7') FROM once.outbox
            WHERE topic IN ('saga.one', 'saga.two')), '... none the start''s own span');
SELECT is((SELECT traceparent FROM once.saga_instances WHERE saga_id = 's-1'),
          '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'the saga keeps the context it was started under');

SELECT * FROM finish();
ROLLBACK;
