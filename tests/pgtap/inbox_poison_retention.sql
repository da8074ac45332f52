-- Inbox: failed attempts, poison and retry; per-source retention and bounded purge.
BEGIN;
SELECT plan(32);

CREATE TABLE effects (message_id text);
CREATE FUNCTION h(msg once.inbound) RETURNS void LANGUAGE sql AS $$ INSERT INTO effects VALUES (msg.message_id) $$;
SELECT once.subscribe('job.*', 'h(once.inbound)');

-- poison after the default 5 attempts
SELECT is(once.inbox_failed('q', 'j1', 'timeout'), 1, 'inbox_failed returns the attempt count');
SELECT is(once.inbox_failed('q', 'j1', 'timeout'), 2, 'and counts up');
SELECT is(once.deliver('q', 'j1', 'job.run', '{}'), 'processed', 'below the threshold the handler runs');
SELECT is((SELECT count(*) FROM effects), 1::bigint, 'the handler ran');
SELECT is(once.inbox_failed('q', 'j2', NULL), 1, 'an error text is optional');
SELECT is(once.inbox_failed('q', 'j2', 'e2'), 2, 'attempt 2');
SELECT is(once.inbox_failed('q', 'j2', 'e3'), 3, 'attempt 3');
SELECT is(once.inbox_failed('q', 'j2', 'e4'), 4, 'attempt 4');
SELECT is(once.inbox_failed('q', 'j2', 'e5'), 5, 'attempt 5');
SELECT is(once.deliver('q', 'j2', 'job.run', '{}'), 'poison', 'after 5 attempts deliver returns poison');
SELECT is((SELECT count(*) FROM effects WHERE message_id = 'j2'), 0::bigint, 'a poison message runs no handler');
SELECT results_eq($$SELECT source, message_id, attempts, max_attempts, last_error FROM once.inbox_poison$$,
                  $$VALUES ('q', 'j2', 5, 5, 'e5')$$, 'once.inbox_poison lists it with its last error');
SELECT is(once.receive('q', 'j2'), false, 'receive also refuses a poison message');
SELECT is(once.deliver('q', 'j2', 'nothing.subscribed', '{}'), 'poison', 'poison is reported even without a handler');
SELECT is(once.inbox_retry('q', 'j2'), true, 'inbox_retry forgets the failures');
SELECT is(once.deliver('q', 'j2', 'job.run', '{}'), 'processed', 'after inbox_retry the handler runs');
SELECT is(once.inbox_retry('q', 'nope'), false, 'inbox_retry of an unknown message returns false');

-- per-source threshold
SELECT once.inbox_configure('flaky', '7 days', 2);
SELECT once.inbox_failed('flaky', 'f1', 'x');
SELECT once.inbox_failed('flaky', 'f1', 'x');
SELECT is(once.deliver('flaky', 'f1', 'job.run', '{}'), 'poison', 'a per-source max_attempts of 2');
-- a message processed meanwhile stays processed
SELECT once.inbox_failed('flaky', 'done-1', 'x');
SELECT is(once.deliver('flaky', 'done-1', 'job.run', '{}'), 'processed', 'processed after one failure');
SELECT is(once.inbox_failed('flaky', 'done-1', 'late report'), 2, 'a late failure report is counted');
SELECT is(once.deliver('flaky', 'done-1', 'job.run', '{}'), 'duplicate', 'but does not turn a processed message into poison');
SELECT throws_ok($$SELECT once.inbox_failed(NULL, 'x', 'e')$$, 'ON302', NULL, 'inbox_failed: NULL source');
SELECT throws_ok($$SELECT once.inbox_configure('s', '-1 day', 3)$$, '22023', NULL, 'inbox_configure: negative retention');
SELECT throws_ok($$SELECT once.inbox_configure(E'a\tb')$$, 'ON302', NULL, 'inbox_configure: control character in source');
SELECT throws_ok($$SELECT once.inbox_configure('s', '1 day', 0)$$, '22023', NULL, 'inbox_configure: max_attempts 0');

-- retention: the default window is 7 days, per source configurable; purge is bounded
SELECT once.inbox_configure('short', '1 hour');
SELECT once.receive('short', 'old-' || i) FROM generate_series(1, 3) i;
SELECT once.receive('short', 'new');
SELECT once.receive('long', 'old-' || i) FROM generate_series(1, 2) i;
SELECT once.receive('long', 'ancient');
UPDATE once.inbox SET received_at = now() - '2 hours'::interval WHERE message_id LIKE 'old-%';
UPDATE once.inbox SET received_at = now() - '8 days'::interval WHERE message_id = 'ancient';
-- a poison message of the short source, poisoned long ago
SELECT once.inbox_configure('short', '1 hour', 1);
SELECT once.inbox_failed('short', 'bad', 'boom');
UPDATE once.inbox SET received_at = now() - '2 days'::interval WHERE message_id = 'bad';
UPDATE once.inbox_failures SET last_failed_at = now() - '2 days'::interval WHERE source = 'short';
-- an old failure record of a message that is not poison
SELECT once.inbox_failed('long', 'flaky-old', 'x');
UPDATE once.inbox_failures SET last_failed_at = now() - '8 days'::interval WHERE message_id = 'flaky-old';
SELECT is(once.purge_inbox(2), 2::bigint, 'purge_inbox stops at its budget');
SELECT is(once.purge(), 3::bigint, 'once.purge removes the rest that is past its window, and old failure records');
SELECT is((SELECT count(*) FROM once.inbox_failures WHERE message_id = 'flaky-old'), 0::bigint, 'an old failure record is gone');
SELECT results_eq($$SELECT message_id FROM once.inbox_poison WHERE source = 'short'$$, ARRAY['bad'],
                  'a poison message is kept past the window, with its failure record: it needs a person');
SELECT results_eq($$SELECT source, message_id FROM once.inbox WHERE source IN ('short', 'long') ORDER BY 1, 2$$,
                  $$VALUES ('long', 'old-1'), ('long', 'old-2'), ('short', 'bad'), ('short', 'new')$$,
                  'purge respects each source''s window (2 hours old: gone for a 1-hour source, kept for the 7-day default)');
SELECT is(once.receive('long', 'ancient'), true, 'a duplicate older than the window runs again (the documented trade-off)');

SELECT ok((SELECT ARRAY['once.inbox', 'once.inbox_failures', 'once.inbox_sources', 'once.inbox_subscriptions']::regclass[]::oid[]
                   <@ extconfig FROM pg_extension WHERE extname = 'pg_once'),
          'pg_dump keeps the inbox tables'' rows (extension configuration tables)');

SELECT * FROM finish();
ROLLBACK;
