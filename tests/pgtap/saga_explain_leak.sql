-- A producer cannot learn another role's saga ids through EXPLAIN ANALYZE of once.sagas or
-- once.saga_history. A range on saga_id is leakproof, so the planner used to push it below
-- the views' security barrier into an index condition evaluated before the row filter; the
-- plan's "Rows Removed by Filter" then counted the hidden sagas in the range, and a producer
-- recovered another role's saga id one character at a time. Now what a producer queries is
-- filtered on the starter first: the plan's counts are the same whether or not a hidden saga
-- falls in the range. once_admin's keyed lookups stay index lookups.
BEGIN;
SELECT plan(9);

CREATE ROLE leak_victim IN ROLE once_producer;
CREATE ROLE leak_prober IN ROLE once_producer;
CREATE ROLE leak_admin IN ROLE once_admin;

SET ROLE leak_admin;
SELECT once.saga_define('leak_saga', '{"steps": [{"name": "pay", "action": {"topic": "payment.charge"}}]}');
RESET ROLE;
SET ROLE leak_victim;
SELECT once.saga_start('leak_saga', 'secret-m');
RESET ROLE;
SET ROLE leak_prober;
SELECT once.saga_start('leak_saga', 'own-1');
RESET ROLE;

-- Every row count in the plan of `query` run with EXPLAIN ANALYZE as `role`, in plan order.
-- Sequential scans are off, as a prober would set them, so that an index can serve the range.
CREATE FUNCTION pg_temp.plan_counts(role text, query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan text;
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', role);
    SET LOCAL enable_seqscan = off;
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query INTO plan;
    RESET ROLE;
    RESET enable_seqscan;
    RETURN (SELECT string_agg(m[1] || '=' || m[2], ' ')
              FROM regexp_matches(plan, '"(Actual Rows|Actual Loops|Rows Removed by [A-Za-z ]+|Heap Fetches)": ([0-9.]+)', 'g') m);
END $$;
CREATE FUNCTION pg_temp.plan_text(role text, query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan text;
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', role);
    SET LOCAL enable_seqscan = off;
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query INTO plan;
    RESET ROLE;
    RESET enable_seqscan;
    RETURN plan;
END $$;

SELECT is(pg_temp.plan_counts('leak_prober', $$SELECT * FROM once.sagas WHERE saga_id >= 'secret-a' AND saga_id < 'secret-n'$$),
          pg_temp.plan_counts('leak_prober', $$SELECT * FROM once.sagas WHERE saga_id >= 'secret-n' AND saga_id < 'secret-z'$$),
    'once.sagas: EXPLAIN ANALYZE counts the same rows whether or not another role''s saga id is in the range');
SELECT is(pg_temp.plan_counts('leak_prober', $$SELECT * FROM once.sagas WHERE saga_id = 'secret-m'$$),
          pg_temp.plan_counts('leak_prober', $$SELECT * FROM once.sagas WHERE saga_id = 'secret-x'$$),
    'once.sagas: ... nor for an exact id');
SELECT is(pg_temp.plan_counts('leak_prober', $$SELECT * FROM once.saga_history WHERE saga_id >= 'secret-a' AND saga_id < 'secret-n'$$),
          pg_temp.plan_counts('leak_prober', $$SELECT * FROM once.saga_history WHERE saga_id >= 'secret-n' AND saga_id < 'secret-z'$$),
    'once.saga_history: the same');

SET ROLE leak_prober;
SELECT is((SELECT count(*)::int FROM once.sagas WHERE saga_id >= 'secret-a' AND saga_id < 'secret-n'), 0,
    'the prober does not see the other role''s saga');
SELECT is((SELECT array_agg(saga_id) FROM once.sagas), ARRAY['own-1'], 'the prober sees its own saga');
SELECT ok((SELECT count(*) FROM once.saga_history WHERE saga_id = 'own-1') > 0, '... and its history');
RESET ROLE;

SET ROLE leak_admin;
SELECT is((SELECT count(*)::int FROM once.sagas WHERE saga_id >= 'secret-a' AND saga_id < 'secret-n'), 1, 'once_admin sees every saga');
RESET ROLE;
SELECT matches(pg_temp.plan_text('leak_admin', $$SELECT * FROM once.sagas WHERE saga_id = 'secret-m'$$), '"Index Cond"',
    'once_admin''s lookup of a saga id is an index lookup');
SELECT matches(pg_temp.plan_text('leak_admin', $$SELECT * FROM once.saga_history WHERE saga_id = 'secret-m'$$), '"Index Cond"',
    'once_admin''s lookup of a saga''s history is an index lookup');

SELECT * FROM finish();
ROLLBACK;
