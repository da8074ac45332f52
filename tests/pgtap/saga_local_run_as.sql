-- Whom a saga's local step runs as. 0.2 ran it as the role that called
-- saga_tick -- the relay -- so the owner of a step function, a producer, could replace its
-- body after the admin defined the saga and lease every other producer's messages with the
-- relay's rights. Now it runs as the definition's run_as role or as its owner, and a run_as
-- role its owner could borrow by rewriting it is refused (ON306), at saga_define and again at
-- every run.
BEGIN;
SELECT plan(11);

CREATE ROLE step_relay LOGIN IN ROLE once_relay;
CREATE ROLE step_mallory LOGIN IN ROLE once_producer;   -- owns a step function
CREATE ROLE step_code IN ROLE once_producer;            -- owns the service's functions
CREATE ROLE step_writer IN ROLE once_producer;          -- the role the admin picks for steps
GRANT step_writer TO step_code;                         -- step_code has step_writer's rights
CREATE ROLE step_admin LOGIN IN ROLE once_admin;

CREATE TABLE public.step_runs (saga_id text, run_as text, leased integer);
GRANT INSERT ON public.step_runs TO PUBLIC;
GRANT CREATE ON SCHEMA public TO step_mallory, step_code;

-- The producer's function tries what the relay may do, then fails with whom it ran as.
SET ROLE step_mallory;
CREATE FUNCTION public.mallory_step(saga_id text, data jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    leased integer;
BEGIN
    BEGIN
        SELECT count(*) INTO leased FROM once.claim('stolen', 100);
    EXCEPTION WHEN insufficient_privilege THEN
        leased := -1;
    END;
    RAISE EXCEPTION 'ran as %, leased %', current_user, leased;
END $$;
RESET ROLE;
SET ROLE step_code;
CREATE FUNCTION public.code_step(saga_id text, data jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.step_runs VALUES (saga_id, current_user, NULL);
    RETURN '{}';
END $$;
RESET ROLE;

CREATE FUNCTION pg_temp.due(saga text) RETURNS void LANGUAGE sql AS $$
    UPDATE once.saga_instances SET deadline = now() - interval '1 second' WHERE saga_id = saga $$;
CREATE FUNCTION pg_temp.tick(saga text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.due(saga);
    SET LOCAL ROLE step_relay;
    RETURN once.saga_tick();
END $$;

SELECT once.send('other.service', '{"secret": "theirs"}');   -- what a relay could lease

SET ROLE step_admin;
SELECT throws_ok($$SELECT once.saga_define('mal_as_relay', '{"steps": [{"name": "s", "action": {"function": "public.mallory_step"}}]}', 'step_relay')$$,
    'ON306', 'the saga step function may not run as role "step_relay"',
    'a step whose owner lacks the run_as role''s rights is refused at saga_define (ON306)');
SELECT is(once.saga_define('mal', '{"steps": [{"name": "s", "action": {"function": "public.mallory_step"}}]}'), 1,
    'a step function without a run_as role is accepted: it runs as its owner');
SELECT is(once.saga_define('code', '{"steps": [{"name": "s", "action": {"function": "public.code_step"}}]}', 'step_writer'), 1,
    'a run_as role that the owner has the rights of is accepted');
SELECT is(once.saga_define('code', '{"steps": [{"name": "s", "action": {"function": "public.code_step"}}]}', 'step_writer'), 1,
    'defining the same again is a no-op');
RESET ROLE;
SELECT is((SELECT run_as::text FROM once.saga_definitions WHERE name = 'code'), 'step_writer', 'the definition keeps its run_as role');

SELECT once.saga_start('mal', 'm-1');
SELECT is(pg_temp.tick('m-1'), 1, 'the relay ticks the saga with the producer''s local step');
RESET ROLE;
SELECT is((SELECT last_error FROM once.sagas WHERE saga_id = 'm-1'), 'step s failed: ran as step_mallory, leased -1',
    'the step ran as its owner, not as the relay, so the relay-only claim was denied to it');
SELECT is((SELECT count(*)::int FROM once.outbox WHERE relay IS NOT NULL), 0, 'no message was leased');

SELECT once.saga_start('code', 'c-1');
SELECT pg_temp.tick('c-1');
RESET ROLE;
SELECT is((SELECT run_as FROM public.step_runs WHERE saga_id = 'c-1'), 'step_writer', 'a step with a run_as role ran as it');

-- The owner changes after the admin chose run_as: the step does not run.
ALTER FUNCTION public.code_step(text, jsonb) OWNER TO step_mallory;
SELECT once.saga_start('code', 'c-2');
SELECT pg_temp.tick('c-2');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM public.step_runs WHERE saga_id = 'c-2'), 0,
    'a step whose new owner lacks the run_as role''s rights did not run');
SELECT matches((SELECT last_error FROM once.sagas WHERE saga_id = 'c-2'), 'may not run as role "step_writer"',
    '... and the saga says why');

SELECT * FROM finish();
ROLLBACK;
