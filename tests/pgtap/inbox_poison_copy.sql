-- Inbox: a poison message keeps a copy of itself (inbox_failed with topic, payload and
-- headers), and once.inbox_retry runs its handlers again from that copy, in the caller's
-- transaction, as its owner; a failing handler or a missing one leaves it poison.
BEGIN;
SELECT plan(20);

CREATE ROLE copy_code;           -- owns the handler
CREATE ROLE copy_ops LOGIN;      -- an administrator who retries
GRANT once_admin TO copy_ops;
CREATE TABLE effects (message_id text, topic text, payload jsonb, headers jsonb, ran_as name);
GRANT INSERT ON effects TO copy_code;
CREATE TABLE switch (fail boolean);
INSERT INTO switch VALUES (true);
GRANT SELECT ON switch TO copy_code;
CREATE FUNCTION h(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT fail FROM public.switch) THEN RAISE EXCEPTION 'handler refuses %', msg.message_id; END IF;
  INSERT INTO public.effects VALUES (msg.message_id, msg.topic, msg.payload, msg.headers, current_user);
END $$;
ALTER FUNCTION h(once.inbound) OWNER TO copy_code;
SELECT once.subscribe('order.*', 'h(once.inbound)');
SELECT once.inbox_configure('relay', max_attempts => 2);

-- two failures with a copy: poison, with its topic and its copy
SELECT is(once.inbox_failed('relay', 'm1', 'e1', 'order.created', '{"n": 1}', '{"key": "k1"}'), 1, 'inbox_failed with a copy counts');
SELECT is(once.inbox_failed('relay', 'm1', 'e2', 'order.created', '{"n": 1}', '{"key": "k1"}'), 2, 'attempt 2');
SELECT is(once.deliver('relay', 'm1', 'order.created', '{"n": 1}'), 'poison', 'poison after max_attempts');
SELECT is((SELECT topic FROM once.inbox WHERE source = 'relay' AND message_id = 'm1'), 'order.created',
          'the poison row records its topic');
SELECT results_eq($$SELECT topic, payload, headers, has_copy FROM once.inbox_poison WHERE message_id = 'm1'$$,
                  $$VALUES ('order.created'::text, '{"n": 1}'::jsonb, '{"key": "k1"}'::jsonb, true)$$,
                  'once.inbox_poison shows the copy');
SELECT is((SELECT has_copy FROM once.console_inbox_poison() WHERE message_id = 'm1'), true,
          'console_inbox_poison says there is a copy');

-- retry while the handler still fails: the error reaches the caller, the message stays poison
SET ROLE copy_ops;
SELECT throws_ok($$SELECT once.inbox_retry('relay', 'm1')$$, 'P0001', 'handler refuses m1',
                 'retry runs the handler now: its error reaches the caller');
RESET ROLE;
SELECT is((SELECT count(*) FROM once.inbox_poison WHERE message_id = 'm1'), 1::bigint, 'and the message stays poison');
SELECT is((SELECT attempts FROM once.inbox_failures WHERE message_id = 'm1'), 2, 'with its failures');

-- no handler for its topic any more: refused with ON307, stays poison
SELECT once.unsubscribe('order.*');
SET ROLE copy_ops;
SELECT throws_ok($$SELECT once.inbox_retry('relay', 'm1')$$, 'ON307', NULL, 'retry without a handler: ON307');
RESET ROLE;
SELECT is((SELECT count(*) FROM once.inbox_poison WHERE message_id = 'm1'), 1::bigint, 'still poison');
SELECT once.subscribe('order.*', 'h(once.inbound)');

-- fixed: retry runs the handler from the copy, as the handler's owner, in this transaction
UPDATE switch SET fail = false;
SET ROLE copy_ops;
SELECT is(once.inbox_retry('relay', 'm1'), true, 'retry succeeds');
RESET ROLE;
SELECT results_eq($$SELECT message_id, topic, payload, headers, ran_as FROM effects$$,
                  $$VALUES ('m1'::text, 'order.created'::text, '{"n": 1}'::jsonb, '{"key": "k1"}'::jsonb, 'copy_code'::name)$$,
                  'the handler ran once, with the stored payload and headers, as its owner');
SELECT is((SELECT count(*) FROM once.inbox_poison), 0::bigint, 'no longer poison');
SELECT is((SELECT count(*) FROM once.inbox_failures), 0::bigint, 'failures and copy forgotten');
SELECT is(once.deliver('relay', 'm1', 'order.created', '{"n": 1}'), 'duplicate', 'processed: a redelivery is a duplicate');

-- without a copy (inbox_failed with three arguments), retry only forgets the failures
UPDATE switch SET fail = true;
SELECT once.inbox_failed('relay', 'm2', 'e');
SELECT once.inbox_failed('relay', 'm2', 'e');
SELECT is((SELECT has_copy FROM once.inbox_poison WHERE message_id = 'm2'), false, 'poison without a copy');
SELECT is(once.inbox_retry('relay', 'm2'), true, 'retry forgets its failures');
SELECT is((SELECT count(*) FROM effects WHERE message_id = 'm2'), 0::bigint, 'and runs nothing: the sender must deliver it again');
SELECT throws_ok($$SELECT once.inbox_failed('relay', 'm3', 'e', '', '{}', NULL)$$, NULL, NULL,
                 'inbox_failed with a copy validates the topic');

SELECT * FROM finish();
ROLLBACK;
