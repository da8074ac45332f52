-- once-console's on-call functions: the retrying messages in the order they come due, a
-- message id found wherever it is (or nowhere), the dead letters a filter matches and the
-- redrive / discard of those up to a bound (a later death is not touched), who may call what.
BEGIN;
SELECT plan(23);

-- payment.capture: 3 dead (pay-1..3), 3 retrying (pay-4..6)
SELECT count(once.send('payment.capture', jsonb_build_object('o', g), 'pay-' || g)) FROM generate_series(1, 6) g;
SELECT count(once.dead('r', m.id, 'HTTP 502 card processor unreachable')) FROM once.claim('r', 3, '1 minute', ARRAY['payment.capture']) m;
SELECT count(once.nack('r', m.id, 'timeout talking to the sink')) FROM once.claim('r', 3, '1 minute', ARRAY['payment.capture']) m;
SELECT once.send('mail.send', '{}', NULL, NULL, now() + interval '1 hour');   -- delayed, not retrying
SELECT once.inbox_configure('shop', '7 days', 2);
SELECT once.inbox_failed('shop', 'msg-1', 'handler failed') FROM generate_series(1, 2);

SET LOCAL ROLE once_console_viewer;
SELECT is((SELECT string_agg(key || ' ' || attempt || ' ' || last_error, ', ' ORDER BY key) FROM once.console_retrying()),
          'pay-4 1 timeout talking to the sink, pay-5 1 timeout talking to the sink, pay-6 1 timeout talking to the sink',
          'retrying: the three nacked messages, not the dead or the delayed one');
SELECT is((SELECT string_agg(r.key, ' ' ORDER BY r.pos) FROM once.console_retrying(NULL, (SELECT pos FROM once.console_retrying() ORDER BY pos LIMIT 1), 50) r),
          (SELECT string_agg(r.key, ' ' ORDER BY r.pos) FROM (SELECT * FROM once.console_retrying() ORDER BY pos OFFSET 1) r),
          'retrying: the page after a position');
SELECT is((SELECT count(*) FROM once.console_retrying('mail.send')), 0::bigint, 'retrying: filtered by topic');
RESET ROLE;

SELECT id AS dead_id FROM once.outbox WHERE key = 'pay-1' \gset
SELECT id AS retry_id FROM once.outbox WHERE key = 'pay-4' \gset
SELECT id AS delayed_id FROM once.outbox WHERE topic = 'mail.send' \gset
SET LOCAL ROLE once_console_viewer;
SELECT is((SELECT place || ' ' || state || ' ' || key FROM once.console_find_message(:'dead_id')), 'outbox dead pay-1', 'find: a dead letter');
SELECT is((SELECT place || ' ' || state FROM once.console_find_message(:'retry_id')), 'outbox retrying', 'find: a retrying message');
SELECT is((SELECT place || ' ' || state FROM once.console_find_message(:'delayed_id')), 'outbox delayed', 'find: a delayed message');
SELECT is((SELECT string_agg(place || ' ' || state || ' ' || source, ', ' ORDER BY place) FROM once.console_find_message('msg-1')),
          'inbox poison shop, inbox failures failed 2 times shop', 'find: an inbox message id, poison, and its failures');
SELECT is((SELECT count(*) FROM once.console_find_message('01a2232e-49b4-72e7-9288-296eb2bad9fd')), 0::bigint,
          'find: an id pg_once has nowhere');
SELECT throws_ok($$SELECT * FROM once.console_find_message('')$$, '22023', NULL, 'find: an empty id is refused');

SELECT is((SELECT matching FROM once.console_dead_letters_matching('payment.capture', 'pay-', 'UNREACHABLE', NULL)), 3,
          'matching: topic, key prefix and error text (any case)');
SELECT is((SELECT matching FROM once.console_dead_letters_matching(NULL, 'pay-2', NULL, NULL)), 1, 'matching: a key prefix');
SELECT is((SELECT matching FROM once.console_dead_letters_matching(NULL, NULL, NULL, '2000-01-01')), 0, 'matching: dead before');
SELECT throws_ok($$SELECT once.console_dead_letters_act('mallory', 'redrive', NULL, NULL, NULL, NULL, now())$$, '42501', NULL,
                 'a viewer cannot act by filter');
RESET ROLE;

-- the bound: what the confirmation counted; a dead letter that dies later is not touched
SELECT newest_dead_at AS bound FROM once.console_dead_letters_matching('payment.capture', 'pay-', NULL, NULL) \gset
UPDATE once.outbox SET dead_at = :'bound'::timestamptz + interval '1 second', visible_at = 'infinity',
                       pos = '00000000-0000-0000-0000-000000000000'
 WHERE key = 'pay-4';   -- dies after the confirmation
SET LOCAL ROLE once_console_admin;
SELECT throws_ok($$SELECT once.console_dead_letters_act('ops', 'drop', NULL, NULL, NULL, NULL, now())$$, '22023', NULL,
                 'an unknown op is refused');
SELECT throws_ok($$SELECT once.console_dead_letters_act('ops', 'redrive', NULL, NULL, NULL, NULL, NULL)$$, '22023', NULL,
                 'the bound must be given');
SELECT throws_ok($$SELECT once.console_dead_letters_act('', 'redrive', NULL, NULL, NULL, NULL, now())$$, '22023', NULL,
                 'the actor must be given');
SELECT is(once.console_dead_letters_act('ops', 'redrive', 'payment.capture', 'pay-', NULL, NULL, :'bound'), 3,
          'redrive by filter: the three counted');
RESET ROLE;
SELECT is((SELECT string_agg(key, ' ' ORDER BY key) FROM once.outbox WHERE dead_at IS NOT NULL), 'pay-4',
          'the one that died after the bound stays dead');
SELECT is((SELECT affected || ' ' || result || ' ' || array_to_string(ids, ' ') FROM once.console_actions WHERE action = 'redrive_matching'),
          '3 3 matched topic=payment.capture key_prefix=pay- error=* dead_before=* dead_at<=' || :'bound'::timestamptz::text,
          'the action is recorded with its filter and bound');
SET LOCAL ROLE once_console_admin;
SELECT is(once.console_dead_letters_act('ops', 'discard', NULL, 'pay-4', NULL, NULL, :'bound'::timestamptz + interval '1 second'), 1,
          'discard by filter');
SELECT is(once.console_dead_letters_act('ops', 'discard', NULL, 'pay-4', NULL, NULL, now()), 0, 'nothing left to discard: 0');
RESET ROLE;
SELECT is((SELECT count(*) FROM once.outbox WHERE key = 'pay-4'), 0::bigint, 'discarded for good');

-- more than once.redrive takes at once
INSERT INTO once.outbox (id, visible_at, pos, dead_at, topic, payload, last_error)
SELECT gen_random_uuid(), 'infinity', '00000000-0000-0000-0000-000000000000', now() - interval '1 hour', 'bulk.topic', '{}', 'x'
  FROM generate_series(1, 10001);
SET LOCAL ROLE once_console_admin;
SELECT throws_ok($$SELECT once.console_dead_letters_act('ops', 'redrive', 'bulk.topic', NULL, NULL, NULL, now())$$, 'ON211', NULL,
                 'more than 10000 matches are refused');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
