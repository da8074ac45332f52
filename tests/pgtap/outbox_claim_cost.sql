-- What a claim reads: a claim for some topics must not walk the backlog
-- of topics it did not ask for, nor dead or delayed messages, nor the messages of a key that
-- wait behind its in-flight head. Counted, not timed: the index
-- entries this transaction's scans read from once.outbox's indexes
-- (pg_stat_get_xact_tuples_returned of each index), before and after one claim. In 0.1 the
-- first case read every entry of the 20k backlog.
BEGIN;
SELECT plan(10);

CREATE FUNCTION pg_temp.fetched() RETURNS bigint LANGUAGE sql
AS $$ SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid))::bigint
         FROM pg_index i WHERE i.indrelid = 'once.outbox'::regclass $$;
CREATE FUNCTION pg_temp.claim_cost(topics text[], OUT claimed int, OUT fetched bigint) LANGUAGE plpgsql AS $$
DECLARE before bigint := pg_temp.fetched();
BEGIN
    SELECT count(*) INTO claimed FROM once.claim('cost', 10, '1 minute', topics);
    fetched := pg_temp.fetched() - before;
END $$;

-- 20k messages of a topic whose sink is down, older than the ones the relay asks for
SELECT count(*) FROM once.send_many('backlog.orders', (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 10000) i));
SELECT count(*) FROM once.send_many('backlog.orders', (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 10000) i));
SELECT once.send('drain.mail', jsonb_build_object('i', i)) FROM generate_series(1, 30) i;
ANALYZE once.outbox;

SELECT cmp_ok((SELECT fetched FROM pg_temp.claim_cost('{drain.mail}')), '<', 200::bigint,
    'a claim for one literal topic does not walk another topic''s 20k backlog');
SELECT cmp_ok((SELECT fetched FROM pg_temp.claim_cost('{drain.>}')), '<', 200::bigint,
    'nor does a claim with a wildcard pattern');
SELECT is((SELECT claimed FROM pg_temp.claim_cost('{drain.*, drain.mail}')), 10,
    'overlapping patterns claim each message once');
-- control: the counter does see such a walk (0.1's claim: id order, topic filtered row by row)
SET LOCAL enable_seqscan = off;
SET LOCAL enable_sort = off;
CREATE TEMP TABLE walk AS SELECT pg_temp.fetched() AS before;
SELECT count(*) FROM (SELECT id FROM once.outbox WHERE topic || '' = 'drain.mail' ORDER BY id LIMIT 10) w;
SELECT ok((SELECT pg_temp.fetched() - before > 10000 FROM walk),
    'control: a scan in id order that filters topics row by row reads the backlog, and is counted');
RESET enable_seqscan;
RESET enable_sort;

-- 20k delayed and 20k dead messages of the wanted topic itself, older than its 5 ready ones
-- (on a fresh table: rows updated in this transaction would leave index entries it must skip)
TRUNCATE once.outbox;
SELECT count(once.send('drain.mail', '{}', deliver_at => now() + interval '1 hour')) FROM generate_series(1, 20000);
INSERT INTO once.outbox (id, topic, payload, visible_at, dead_at, pos, attempt, last_error)
SELECT once._outbox_position(clock_timestamp()), 'drain.mail', '{}', 'infinity', now(),
       '00000000-0000-0000-0000-000000000000', 25, 'test' FROM generate_series(1, 20000);
SELECT once.send('drain.mail', jsonb_build_object('i', i)) FROM generate_series(1, 5) i;
ANALYZE once.outbox;
SELECT cmp_ok((SELECT fetched FROM pg_temp.claim_cost('{drain.mail}')), '<', 200::bigint,
    'delayed and dead messages of the topic are not walked');
-- (An unfiltered claim walks the primary key from the low watermark, which an open producer
-- transaction caps at its start -- here, this test's own. See docs/outbox.md, "What a claim reads".)
SELECT is((SELECT count(*)::int FROM once.outbox WHERE relay = 'cost'), 5,
    'the 5 ready ones were handed out, none of the others');

-- 20k messages of one key sent while its head is in flight (leased): they wait
TRUNCATE once.outbox;
SELECT once.send('drain.mail', '{"head": true}', key => 'hot');
SELECT is((SELECT payload FROM once.claim('cost', 1, '1 minute', '{drain.mail}')), '{"head": true}'::jsonb,
    'the key''s head is claimed and is now in flight');
SELECT count(*) FROM once.send_many('drain.mail', (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 10000) i),
                                    (SELECT array_agg('hot'::text) FROM generate_series(1, 10000)));
SELECT count(*) FROM once.send_many('drain.mail', (SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 10000) i),
                                    (SELECT array_agg('hot'::text) FROM generate_series(1, 10000)));
SELECT once.send('drain.mail', jsonb_build_object('i', i), key => 'cold-' || i) FROM generate_series(1, 5) i;
ANALYZE once.outbox;
SELECT is((SELECT count(*)::int FROM once.outbox WHERE pos = 'ffffffff-ffff-ffff-ffff-ffffffffffff'), 20000,
    'the 20k messages behind it wait (the waiting position)');
SELECT cmp_ok((SELECT fetched FROM pg_temp.claim_cost('{drain.mail}')), '<', 200::bigint,
    'a claim does not walk the messages waiting behind an in-flight head');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE relay = 'cost'), 6,
    'the other keys'' 5 messages were handed out, none of the waiting ones');

SELECT * FROM finish();
ROLLBACK;
