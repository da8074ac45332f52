-- Privileges: least privilege roles, caller's rights for user commands, pinned search_path.
BEGIN;
SELECT plan(14);

CREATE ROLE app_user LOGIN;                       -- may use idempotency keys
GRANT once_producer TO app_user;
CREATE ROLE stranger LOGIN;                       -- has no pg_once role
CREATE TABLE public.secrets (v text);
INSERT INTO public.secrets VALUES ('s3cr3t');
CREATE TABLE public.visible (v text);
GRANT SELECT, INSERT ON public.visible TO app_user;

-- Catalog rules that every pg_once object must keep.
SELECT is((SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'once' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
              AND (has_table_privilege('public', c.oid, 'INSERT') OR has_table_privilege('public', c.oid, 'UPDATE')
                   OR has_table_privilege('public', c.oid, 'DELETE') OR has_table_privilege('public', c.oid, 'SELECT'))),
          0::bigint, 'PUBLIC has no privilege on any pg_once table or view');
SELECT is((SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'once' AND p.prosecdef
              AND NOT coalesce(p.proconfig::text[] @> ARRAY['search_path=pg_catalog, pg_temp'], false)),
          0::bigint, 'every SECURITY DEFINER function pins search_path = pg_catalog, pg_temp');
SELECT is((SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'once' AND has_function_privilege('public', p.oid, 'EXECUTE')),
          0::bigint, 'PUBLIC may execute no pg_once function');
SELECT is(has_schema_privilege('public', 'once', 'USAGE'), false, 'PUBLIC has no usage on schema once');

SET ROLE stranger;
SELECT throws_ok($$SELECT * FROM once.run('s', 'k', '{}', 'SELECT 1')$$, '42501', NULL,
                 'a role without once_producer cannot call once.run');
RESET ROLE;

SET ROLE app_user;
SELECT is((once.run('s', 'who', '{}', 'SELECT current_user::text')).response, '"app_user"'::jsonb,
          'the command runs as the caller, not as the extension owner');
SELECT throws_ok($$SELECT * FROM once.run('s', 'steal', '{}', 'SELECT v FROM public.secrets')$$, '42501', NULL,
                 'the command cannot read what the caller cannot read');
SELECT throws_ok($$SELECT * FROM once.run('s', 'forge', '{}',
                   $c$INSERT INTO once.keys (scope, key, fingerprint, state, expires_at) VALUES ('x', 'y', '\x00', 'done', now()) RETURNING 1$c$)$$,
                 '42501', NULL, 'the command cannot write pg_once''s tables');
SELECT throws_ok($$SELECT * FROM once.keys$$, '42501', NULL, 'the caller cannot read the key table directly');
SELECT throws_ok($$SELECT once.purge()$$, '42501', NULL, 'a producer cannot purge');
SELECT is((once.run('s', 'ok', '{"v": "hello"}', $c$INSERT INTO public.visible VALUES ($1->>'v') RETURNING v$c$)).response,
          '"hello"'::jsonb, 'the command may do what the caller may do');
RESET ROLE;

-- A hostile search_path cannot redirect pg_once's own statements: an operator "=" on text in a
-- schema searched before pg_catalog would otherwise run as the extension owner.
CREATE SCHEMA evil;
CREATE FUNCTION evil.text_eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS
    $$BEGIN RAISE EXCEPTION 'hijacked'; END$$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.text_eq);
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql AS $$SELECT 'infinity'::timestamptz$$;
GRANT USAGE ON SCHEMA evil TO app_user;
SET ROLE app_user;
SET search_path = evil, pg_catalog, public;
-- (pgTAP's own SQL would be hijacked too, so the calls run bare and are checked afterwards;
-- an error here fails the file.)
CREATE TEMP TABLE hostile AS
    SELECT (once.run('s', 'path', '{}', 'SELECT 1')).response AS run_response,
           (SELECT state FROM once.key_acquire('s', 'path2', '{}')) AS acquire_state;
RESET search_path;
RESET ROLE;
SELECT is((SELECT run_response FROM hostile), '1'::jsonb,
          'once.run ignores operators and functions from a hostile search_path');
SELECT is((SELECT acquire_state FROM hostile), 'acquired', 'so does key_acquire');
SELECT is((SELECT expires_at < 'infinity' FROM once.keys WHERE key = 'path'), true, 'expiry used pg_catalog.now()');

SELECT * FROM finish();
ROLLBACK;
