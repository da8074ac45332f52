-- Idempotency keys belong to the role that stored them (issue 11, finding 3). On 0.1 prod2,
-- which cannot read public.secrets, replayed prod's key and received the secret, could plant
-- a response under prod's key, and could complete or release a key prod held.
BEGIN;
SELECT plan(16);

CREATE ROLE prod LOGIN;
CREATE ROLE prod2 LOGIN;
CREATE ROLE payments NOLOGIN;          -- a group role two services share keys through
CREATE ROLE svc_a LOGIN IN ROLE payments;
CREATE ROLE svc_b LOGIN IN ROLE payments;
GRANT once_producer TO prod, prod2, payments;
CREATE TABLE public.secrets (v text);
INSERT INTO public.secrets VALUES ('s3cr3t-of-prod');
GRANT SELECT ON public.secrets TO prod;

SET ROLE prod;
SELECT is((once.run('POST /payments', 'order-42', '{}', 'SELECT v FROM public.secrets')).response,
          '"s3cr3t-of-prod"'::jsonb, 'prod stores a response it may read');
SELECT is((once.key_acquire('jobs', 'held', '{}')).state, 'acquired', 'prod holds a key');
RESET ROLE;

SET ROLE prod2;
SELECT throws_ok($$SELECT * FROM once.run('POST /payments', 'order-42', '{}', 'SELECT 1')$$, 'ON106', NULL,
                 'another role replaying the key gets ON106, not the stored response');
SELECT throws_ok($$SELECT * FROM once.key_acquire('POST /payments', 'order-42', '{}')$$, 'ON106', NULL,
                 'key_acquire of another role''s key: ON106');
SELECT throws_ok($$SELECT once.key_complete('jobs', 'held', '{"forged": true}')$$, 'ON106', NULL,
                 'key_complete of another role''s key without attempt: ON106');
SELECT throws_ok($$SELECT once.key_release('jobs', 'held')$$, 'ON106', NULL,
                 'key_release of another role''s key without attempt: ON106');
SELECT throws_ok($$SELECT once.key_checkpoint('jobs', 'held', 'step')$$, 'ON106', NULL,
                 'key_checkpoint of another role''s key: ON106');
SELECT is((once.run('POST /payments', 'order-43', '{}', 'SELECT 2')).response, '2'::jsonb,
          'prod2 plants a response under a key prod has not used yet ...');
RESET ROLE;

SET ROLE prod;
SELECT throws_ok($$SELECT * FROM once.run('POST /payments', 'order-43', '{}', 'SELECT 1')$$, 'ON106', NULL,
                 '... and prod gets ON106 instead of prod2''s planted response');
SELECT is((once.key_acquire('jobs', 'held', '{}')).state, 'busy', 'prod still holds its key');
SELECT lives_ok($$SELECT once.key_complete('jobs', 'held', '{"ok": true}')$$, 'prod completes its own key');
RESET ROLE;

-- Sharing on purpose: roles that store keys as a common group role share them.
SET ROLE svc_a;
SET ROLE payments;
SELECT is((once.run('charges', 'c-1', '{}', 'SELECT 1')).replayed, false, 'svc_a stores a key as the group role');
RESET ROLE;
SET ROLE svc_b;
SELECT is((once.run('charges', 'c-1', '{}', 'SELECT 1')).replayed, true,
          'svc_b, a member of the group, replays it');
SELECT is((once.run('charges', 'c-2', '{}', 'SELECT 2')).replayed, false, 'svc_b stores a key as itself');
RESET ROLE;
SET ROLE svc_a;
SELECT throws_ok($$SELECT * FROM once.run('charges', 'c-2', '{}', 'SELECT 2')$$, 'ON106', NULL,
                 'svc_a does not have svc_b''s privileges: ON106');
RESET ROLE;

-- Keys stored by 0.1 (no owner) stay shared until they expire.
UPDATE once.keys SET owner = NULL WHERE scope = 'POST /payments' AND key = 'order-42';
SET ROLE prod2;
SELECT is((once.run('POST /payments', 'order-42', '{}', 'SELECT 1')).replayed, true,
          'a key without owner (stored by 0.1) replays for any producer');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
