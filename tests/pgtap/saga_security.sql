-- Sagas and roles: the relay drives the timer but cannot act as
-- admin or consumer through internal functions, and a hostile search_path cannot hijack
-- saga_tick. Both failed on 0.1: _saga_apply was granted to once_relay, and saga_tick was
-- PL/pgSQL with unqualified operators and no pinned search_path.
BEGIN;
SELECT plan(21);

CREATE SCHEMA cafe;
CREATE TABLE cafe.notified (saga_id text PRIMARY KEY);
CREATE FUNCTION cafe.send_notification(saga_id text, data jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cafe.notified VALUES (saga_id);
    RETURN pg_catalog.jsonb_build_object('notified', true);
END $$;
SELECT once.saga_define('order', $${"steps": [
  {"name": "reserve", "action": {"topic": "stock.reserve"}, "compensation": {"topic": "stock.release"}, "timeout": "30 seconds", "max_attempts": 3},
  {"name": "notify",  "action": {"function": "cafe.send_notification"}, "kind": "retriable"}
]}$$);
CREATE FUNCTION pg_temp.status(saga text) RETURNS text LANGUAGE sql AS $$
    SELECT status FROM once.sagas WHERE saga_id = saga $$;
CREATE FUNCTION pg_temp.attempts(saga text) RETURNS integer LANGUAGE sql AS $$
    SELECT attempts FROM once.sagas WHERE saga_id = saga $$;
CREATE FUNCTION pg_temp.due(saga text) RETURNS void LANGUAGE sql AS $$
    UPDATE once.saga_instances SET deadline = now() - interval '1 second' WHERE saga_id = saga $$;

-- ---------------------------------------------------------------------- internals for nobody
SELECT is((SELECT pg_catalog.array_agg(p.oid::regprocedure::text ORDER BY 1)
             FROM pg_proc p CROSS JOIN (VALUES ('public'), ('once_producer'), ('once_consumer'), ('once_relay'), ('once_admin')) r(role)
            WHERE p.pronamespace = 'once'::regnamespace AND p.proname LIKE '\_saga\_%'
              AND pg_catalog.has_function_privilege(r.role, p.oid, 'EXECUTE')),
    NULL, 'no pg_once role (nor PUBLIC) may execute an internal _saga_* function');

CREATE ROLE saga_sec_relay LOGIN IN ROLE once_relay;
GRANT USAGE ON SCHEMA cafe TO saga_sec_relay;
GRANT INSERT ON cafe.notified TO saga_sec_relay;
SELECT once.saga_start('order', 'victim', '{"item": "latte"}');

SET ROLE saga_sec_relay;
SELECT throws_ok($$SELECT once._saga_apply('victim', '{"type": "abort", "reason": "relay says so"}')$$,
    '42501', NULL, 'the relay cannot abort a saga through _saga_apply');
SELECT throws_ok($$SELECT once._saga_apply('victim', '{"type": "reply", "step": "reserve", "outcome": "succeeded"}', '{"forged": true}', 'forged-1')$$,
    '42501', NULL, 'the relay cannot forge a reply through _saga_apply');
SELECT throws_ok($$SELECT once.saga_abort('victim', 'relay says so')$$, '42501', NULL, '... nor through saga_abort');
SELECT throws_ok($$SELECT once.saga_reply('victim', 'reserve', 'succeeded')$$, '42501', NULL, '... nor through saga_reply');
SELECT throws_ok($$SELECT * FROM once._saga_due(10)$$, '42501', NULL, 'the relay cannot lock due sagas itself');
SELECT throws_ok($$SELECT * FROM once._saga_local('victim', 'order')$$, '42501', NULL, '... nor read a saga''s data');
RESET ROLE;
SELECT is(pg_temp.status('victim'), 'running', 'the saga is untouched');

-- ------------------------------------------- the relay still ticks: timeouts and local steps
SELECT pg_temp.due('victim');
SET ROLE saga_sec_relay;
SELECT is(once.saga_tick(), 1, 'the relay ticks a timed-out saga');
RESET ROLE;
SELECT is(pg_temp.attempts('victim'), 2, '... which resends its command (attempt 2)');

-- ------------------------------------ operators planted on the caller's search_path
-- A role without any pg_once role, allowed to create in a schema on the relay's path, plants
-- operators that shadow the built-ins (exact signatures and the jsonb ->> variant).
CREATE ROLE saga_sec_planter;
CREATE SCHEMA evil AUTHORIZATION saga_sec_planter;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
SET ROLE saga_sec_planter;
CREATE FUNCTION evil.hijack_jj(jsonb, jsonb) RETURNS text LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked ->>'; END$$;
CREATE FUNCTION evil.hijack_jt(jsonb, text) RETURNS text LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked ->> text'; END$$;
CREATE FUNCTION evil.hijack_ii(integer, integer) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked integer comparison'; END$$;
CREATE FUNCTION evil.hijack_tt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked timestamptz comparison'; END$$;
CREATE FUNCTION evil.hijack_plus(integer, integer) RETURNS integer LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked +'; END$$;
CREATE OPERATOR evil.->> (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = evil.hijack_jj);
CREATE OPERATOR evil.->> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = evil.hijack_jt);
CREATE OPERATOR evil.< (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil.hijack_ii);
CREATE OPERATOR evil.>= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil.hijack_ii);
CREATE OPERATOR evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.hijack_tt);
CREATE OPERATOR evil.+ (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil.hijack_plus);
RESET ROLE;

SELECT once.saga_start('order', 'hostile', '{"item": "tea"}');
SELECT once.saga_reply('hostile', 'reserve', 'succeeded', NULL, 'h-1');   -- now waiting for the local notify step
SELECT once.saga_start('order', 'hostile-timeout', '{"item": "tea"}');
SELECT pg_temp.due('hostile-timeout');
-- The hostile path is set by the function's SET clause, so pgTAP's own (unqualified)
-- functions run under the normal path again when the tick returns.
CREATE FUNCTION pg_temp.tick_hostile() RETURNS integer LANGUAGE sql
    SET search_path = evil, pg_catalog, public AS $$ SELECT once.saga_tick() $$;
CREATE FUNCTION pg_temp.tick_hostile(max integer) RETURNS integer LANGUAGE sql
    SET search_path = evil, pg_catalog, public AS $$ SELECT once.saga_tick(max) $$;
SET ROLE saga_sec_relay;
SELECT lives_ok($$SELECT pg_temp.tick_hostile()$$, 'saga_tick ignores operators planted on the caller''s search_path');
SELECT lives_ok($$SELECT pg_temp.tick_hostile(10)$$, '... saga_tick(max) too');
RESET ROLE;
SELECT is(pg_temp.status('hostile'), 'completed', 'the local step ran under the hostile search_path: completed');
SELECT is(pg_temp.attempts('hostile-timeout'), 2, 'the timed-out saga was resent under the hostile search_path');

-- ------------------------------------ a producer sees only its own sagas
CREATE ROLE saga_alice LOGIN IN ROLE once_producer;
CREATE ROLE saga_bob LOGIN IN ROLE once_producer;
CREATE ROLE saga_alice_ops LOGIN IN ROLE saga_alice;   -- has alice's privileges
CREATE ROLE saga_admin LOGIN IN ROLE once_admin;
SET ROLE saga_alice;
SELECT once.saga_start('order', 'alice-1', '{"card_token": "tok_alice"}');
SET ROLE saga_bob;
SELECT is((SELECT count(*) FROM once.sagas WHERE saga_id = 'alice-1'), 0::bigint,
    'another producer does not see the saga in once.sagas');
SELECT is((SELECT count(*) FROM once.saga_history WHERE saga_id = 'alice-1'), 0::bigint,
    '... nor its history');
SELECT is((SELECT count(*) FROM once.sagas WHERE data::text LIKE '%tok_alice%'), 0::bigint,
    '... nor its data through a filter on the data');
SET ROLE saga_alice;
SELECT is((SELECT data->>'card_token' FROM once.sagas WHERE saga_id = 'alice-1'), 'tok_alice',
    'the producer that started it sees it');
SET ROLE saga_alice_ops;
SELECT is((SELECT count(*) FROM once.saga_history WHERE saga_id = 'alice-1') > 0, true,
    'a role with the starter''s privileges sees its history');
SET ROLE saga_admin;
SELECT is((SELECT count(*) FROM once.sagas WHERE saga_id IN ('alice-1', 'victim')), 2::bigint,
    'once_admin sees every saga');
RESET ROLE;
CREATE ROLE saga_gone LOGIN IN ROLE once_producer;
SET ROLE saga_gone;
SELECT once.saga_start('order', 'gone-1', '{}');
RESET ROLE;
DROP ROLE saga_gone;
SET ROLE saga_bob;
SELECT lives_ok($$SELECT count(*) FROM once.sagas$$, 'a saga whose starter role was dropped does not break the view');
RESET ROLE;
SELECT * FROM finish();
ROLLBACK;
