-- once.redrive / once.discard take ids written as text, and
-- once.outbox_stats counts messages stuck behind a dead or delayed key head as blocked, not ready.
BEGIN;
SELECT plan(20);

-- A dead letter on topic (with key); returns its id (psql \gset keeps it as a variable, and
-- :'id' is then an untyped literal).
CREATE FUNCTION pg_temp.make_dead(topic text, key text) RETURNS uuid LANGUAGE plpgsql AS $f$
DECLARE
    id uuid := once.send(topic, '{}', key => key);
BEGIN
    PERFORM once.claim('relay-a', 100, topics => ARRAY[topic]);
    PERFORM once.dead('relay-a', id, 'HTTP 400');
    RETURN id;
END
$f$;

-- ------------------------------------------------------------------ text ids
SELECT pg_temp.make_dead('t.a', NULL) AS d1 \gset
SELECT pg_temp.make_dead('t.b', NULL) AS d2 \gset
SELECT '{' || :'d2' || '}' AS d2a \gset
SELECT pg_temp.make_dead('t.c', NULL) AS d3 \gset
SELECT pg_temp.make_dead('t.d', NULL) AS d4 \gset
SELECT pg_temp.make_dead('t.e', NULL) AS d5 \gset

SELECT is(once.redrive(ARRAY[:'d1']), 1, 'redrive(ARRAY[''…'']) works without a cast');
SELECT is(once.redrive(:'d2a'), 1, 'redrive(''{…}'') (an untyped literal) is not ambiguous');
SELECT is(once.redrive(:'d3'), 1, 'redrive(''…'') takes one id');
SELECT is(once.redrive(ARRAY[:'d4'::uuid]), 1, 'redrive(uuid[]) still works');
SELECT is(once.redrive((SELECT array_agg(id) FROM once.dead_letters)), 1, 'redrive of ids from once.dead_letters still works');
SELECT is((SELECT count(*) FROM once.dead_letters), 0::bigint, 'all five are redriven');

SELECT pg_temp.make_dead('t.a', NULL) AS d11 \gset
SELECT pg_temp.make_dead('t.b', NULL) AS d12 \gset
SELECT '{"' || :'d12' || '"}' AS d12a \gset
SELECT pg_temp.make_dead('t.c', NULL) AS d13 \gset
SELECT is(once.discard(ARRAY[:'d11', '0190f1e2-7a3b-7c4d-8e5f-000000000099']), 1,
          'discard(ARRAY[''…'']) works without a cast (an unknown id counts nothing)');
SELECT is(once.discard(:'d12a'), 1, 'discard(''{…}'') works');
SELECT is(once.discard(ARRAY[:'d13'::uuid]), 1, 'discard(uuid[]) still works');

SELECT throws_ok($$SELECT once.redrive(ARRAY['0190f1e2-7a3b-7c4d-8e5f-000000000001', 'order-42'])$$, 'ON211',
                 'ids must be message ids (uuids): ''order-42'' is not one', 'a text id that is not a uuid is ON211, named');
SELECT throws_ok($$SELECT once.discard('order-42')$$, 'ON211', NULL, 'discard of one bad id too');
CREATE FUNCTION pg_temp.hint_of(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE h text;
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RETURN h;
END
$f$;
SELECT matches(pg_temp.hint_of($$SELECT once.redrive(ARRAY['x'])$$), '^Pass the id column of once.dead_letters, e.g. once.redrive\(ARRAY',
               'the hint says what to pass');
SELECT throws_ok($$SELECT once.redrive(NULL)$$, 'ON211', 'ids must not be NULL', 'NULL is still ON211');
SELECT throws_ok($$SELECT once.redrive(ARRAY[]::text[])$$, 'ON211', NULL, 'an empty text[] is ON211');
SELECT throws_ok($$SELECT once.discard(ARRAY['0190f1e2-7a3b-7c4d-8e5f-000000000001', NULL])$$, 'ON211',
                 'ids must not contain NULL', 'a NULL among text ids is ON211');

-- ------------------------------------------------------------------ outbox_stats: blocked
-- key k1: a dead head and two messages behind it (one on another topic)
SELECT pg_temp.make_dead('s.a', 'k1') AS d101 \gset
SELECT once.send('s.a', '{}', key => 'k1');
SELECT once.send('s.b', '{}', key => 'k1');
-- key k2: a delayed head and one message behind it
SELECT once.send('s.a', '{}', key => 'k2', deliver_at => now() + interval '1 day');
SELECT once.send('s.a', '{}', key => 'k2');
-- key k3: a ready head and one behind it: both ready (the second goes out after the first)
SELECT once.send('s.a', '{}', key => 'k3');
SELECT once.send('s.a', '{}', key => 'k3');
-- no key: ready
SELECT once.send('s.a', '{}');

SELECT results_eq($$SELECT ready, delayed, in_flight, dead, blocked FROM once.outbox_stats WHERE topic = 's.a'$$,
                  $$VALUES (3::bigint, 1::bigint, 0::bigint, 1::bigint, 2::bigint)$$,
                  'messages behind a dead or delayed head are blocked, not ready');
SELECT results_eq($$SELECT ready, blocked FROM once.outbox_stats WHERE topic = 's.b'$$,
                  $$VALUES (0::bigint, 1::bigint)$$, 'a message behind a dead head of another topic is blocked too');
SELECT is((SELECT oldest_ready_age FROM once.outbox_stats WHERE topic = 's.b'), NULL,
          'a topic with only blocked messages has no oldest ready age');
SELECT is((SELECT sum(blocked) FROM once.outbox_stats), (SELECT sum(waiting) FROM once.blocked_keys),
          'outbox_stats.blocked adds up to what blocked_keys says waits');

SELECT once.redrive(ARRAY[:'d101']);
SELECT results_eq($$SELECT sum(ready)::bigint, sum(blocked)::bigint FROM once.outbox_stats WHERE topic IN ('s.a', 's.b')$$,
                  $$VALUES (6::bigint, 1::bigint)$$, 'after the redrive only the delayed head''s follower is blocked');

SELECT * FROM finish();
ROLLBACK;
