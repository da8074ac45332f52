-- Idempotency keys have a namespace per role. 0.1 let another producer replay a key and read
-- its response; 0.2 fixed that with ON106, but then whoever stored a key
-- first owned it, so a producer could squat another role's keys. Now a
-- key's identity is (scope, key, owner): another role's key of the same name is a different
-- key, never its response, never ON106.
BEGIN;
SELECT plan(28);

CREATE ROLE prod LOGIN;
CREATE ROLE prod2 LOGIN;
CREATE ROLE payments NOLOGIN;          -- a group role two services share keys through
CREATE ROLE svc_a LOGIN IN ROLE payments;
CREATE ROLE svc_b LOGIN IN ROLE payments;
CREATE ROLE refunds NOLOGIN;           -- a second group svc_b belongs to
GRANT refunds TO svc_b;
GRANT once_producer TO prod, prod2, payments, refunds;
CREATE TABLE public.secrets (v text);
INSERT INTO public.secrets VALUES ('s3cr3t-of-prod');
GRANT SELECT ON public.secrets TO prod;
CREATE TABLE public.runs (who text);
GRANT INSERT, SELECT ON public.runs TO PUBLIC;
CREATE FUNCTION public.record_run() RETURNS jsonb LANGUAGE sql
    AS $$ INSERT INTO public.runs VALUES (current_user) RETURNING to_jsonb(who) $$;

SET ROLE prod;
SELECT is((once.run('POST /payments', 'order-42', '{}', 'SELECT v FROM public.secrets')).response,
          '"s3cr3t-of-prod"'::jsonb, 'prod stores a response it may read');
SELECT is((once.key_acquire('jobs', 'held', '{}')).state, 'acquired', 'prod holds a key');
RESET ROLE;

SET ROLE prod2;
SELECT is((once.run('POST /payments', 'order-42', '{}', 'SELECT 7')).response, '7'::jsonb,
          'another role using the key gets its own execution, not prod''s stored response');
SELECT is((once.run('POST /payments', 'order-42', '{}', 'SELECT 8')).replayed, true,
          '... and replays it afterwards');
SELECT is((once.key_acquire('jobs', 'held', '{}')).state, 'acquired',
          'key_acquire of a key another role holds: a key of its own');
SELECT is(once.key_release('jobs', 'held'), true, 'prod2 releases its own key ...');
SELECT is(once.key_release('jobs', 'held'), false, '... and cannot release prod''s');
SELECT throws_ok($$SELECT once.key_complete('jobs', 'held', '{"forged": true}')$$, 'ON104', NULL,
                 'key_complete of a key only another role holds: not held (ON104)');
SELECT throws_ok($$SELECT once.key_checkpoint('jobs', 'held', 'step')$$, 'ON104', NULL,
                 'key_checkpoint of a key only another role holds: not held (ON104)');
-- The squat: prod2 stores a key prod will use, for as long as it may.
SELECT is((once.run('POST /payments', 'order-43', '{}', 'SELECT 2', ttl => '30 days')).response, '2'::jsonb,
          'prod2 stores a key prod has not used yet ...');
RESET ROLE;

SET ROLE prod;
SELECT is((once.run('POST /payments', 'order-43', '{}', 'SELECT public.record_run()')).replayed, false,
          '... and prod gets its own execution: not ON106, not prod2''s response');
SELECT is((SELECT array_agg(who) FROM public.runs), ARRAY['prod']::text[], 'prod''s command ran');
SELECT is((once.run('POST /payments', 'order-43', '{}', 'SELECT public.record_run()')).replayed, true,
          'prod''s key replays for prod');
SELECT throws_ok($$SELECT * FROM once.run('POST /payments', 'order-43', '{"other": 1}', 'SELECT 1')$$, 'ON102', NULL,
                 'prod reusing its key with another request: ON102, as before');
SELECT is((once.key_acquire('jobs', 'held', '{}')).state, 'busy', 'prod still holds its key');
SELECT lives_ok($$SELECT once.key_complete('jobs', 'held', '{"ok": true}')$$, 'prod completes its own key');
RESET ROLE;
SELECT is((SELECT count(*) FROM once.keys WHERE scope = 'POST /payments' AND key = 'order-43'), 2::bigint,
          'two keys named order-43, one per role');

-- Sharing on purpose: roles that store keys as a common group role share them.
SET ROLE svc_a;
SET ROLE payments;
SELECT is((once.run('charges', 'c-1', '{}', 'SELECT 1')).replayed, false, 'svc_a stores a key as the group role');
RESET ROLE;
SET ROLE svc_b;
SELECT is((once.run('charges', 'c-1', '{}', 'SELECT 1')).replayed, true,
          'svc_b, a member of the group, replays it without SET ROLE (it has the group''s privileges)');
SELECT is((once.run('charges', 'c-2', '{}', 'SELECT 2')).replayed, false, 'svc_b stores a key as itself');
RESET ROLE;
SET ROLE svc_a;
SELECT is((once.run('charges', 'c-2', '{}', 'SELECT 3')).response, '3'::jsonb,
          'svc_a does not have svc_b''s privileges: its own key, not ON106');
RESET ROLE;
-- Two groups svc_b inherits from stored the same key, svc_b has none: ambiguous.
SET ROLE payments;
SELECT is((once.run('charges', 'c-3', '{}', 'SELECT 1')).replayed, false, 'payments stores c-3');
RESET ROLE;
SET ROLE refunds;
SELECT is((once.run('charges', 'c-3', '{}', 'SELECT 1')).replayed, false, 'refunds stores c-3 as well');
RESET ROLE;
SET ROLE svc_b;
SELECT throws_ok($$SELECT * FROM once.run('charges', 'c-3', '{}', 'SELECT 1')$$, 'ON106', NULL,
                 'a key of two roles whose privileges the caller has: ambiguous (ON106)');
SET ROLE refunds;
SELECT is((once.run('charges', 'c-3', '{}', 'SELECT 1')).replayed, true, 'SET ROLE picks the namespace');
RESET ROLE;

-- Keys stored by 0.1 (owner 0) stay shared in their window; the first to complete one owns it.
UPDATE once.keys SET owner = 0 WHERE scope = 'POST /payments' AND key = 'order-42' AND owner = 'prod'::regrole;
SET ROLE svc_a;
SELECT is((once.run('POST /payments', 'order-42', '{}', 'SELECT 1')).replayed, true,
          'a key without owner (stored by 0.1) replays for any producer');
RESET ROLE;
UPDATE once.keys SET owner = 0, state = 'in_progress', response = NULL, locked_until = now() - interval '1 second'
 WHERE scope = 'jobs' AND key = 'held' AND owner = 'prod'::regrole;
SET ROLE svc_a;
SELECT is((once.key_acquire('jobs', 'held', '{}')).state, 'acquired', 'svc_a takes over a crashed 0.1 key ...');
RESET ROLE;
SELECT is((SELECT array_agg(owner::regrole::text) FROM once.keys WHERE scope = 'jobs' AND key = 'held'),
          ARRAY['svc_a'], '... and owns it');

SELECT * FROM finish();
ROLLBACK;
