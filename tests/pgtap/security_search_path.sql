-- Every function in schema once, generated from the catalog (a new function is covered
-- without editing this file), is called with a hostile search_path: schema "evil" before
-- pg_catalog holds an operator for every built-in operator on the types pg_once uses, and fake
-- now(), clock_timestamp(), random(), current_setting() ... When armed, each planted object
-- raises SQLSTATE HJ001; a call that ends in HJ001 used an object from the search_path where
-- pg_catalog's was meant (as once.saga_tick once did). Calls run as a
-- superuser with sample arguments and again with NULLs; other errors are expected and fine.
BEGIN;
SELECT plan(4);

CREATE SCHEMA evil;
-- The trap: raises only while armed, so this file's own SQL is not disturbed.
CREATE FUNCTION evil.armed() RETURNS boolean LANGUAGE sql STABLE SET search_path = pg_catalog AS
    $$SELECT COALESCE(pg_catalog.current_setting('hostile.armed', true) OPERATOR(pg_catalog.=) 'on', false)$$;
CREATE FUNCTION evil.trap(what text) RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog AS
$$BEGIN
    IF evil.armed() THEN RAISE EXCEPTION 'hijacked by evil.%', what USING ERRCODE = 'HJ001'; END IF;
END$$;

-- One planted operator per built-in binary operator on these types (same name, same types).
DO $$
DECLARE
    o record;
    n int := 0;
BEGIN
    FOR o IN
        SELECT op.oprname, op.oprleft::regtype AS l, op.oprright::regtype AS r, op.oprresult::regtype AS res,
               op.oprcode::regproc AS code
          FROM pg_operator op
         WHERE op.oprnamespace = 'pg_catalog'::regnamespace AND op.oprkind = 'b'
           AND op.oprleft IN ('text'::regtype, 'jsonb'::regtype, 'int4'::regtype, 'int8'::regtype,
                              'timestamptz'::regtype, 'interval'::regtype, 'uuid'::regtype, 'bool'::regtype,
                              'numeric'::regtype, 'bytea'::regtype, 'text[]'::regtype, 'uuid[]'::regtype,
                              'oid'::regtype, 'name'::regtype)
           AND op.oprright <> 0 AND op.oprcode <> 0
    LOOP
        EXECUTE format('CREATE FUNCTION evil.op_%s(a %s, b %s) RETURNS %s LANGUAGE plpgsql SET search_path = pg_catalog AS '
                       '$f$BEGIN PERFORM evil.trap(%L); RETURN %s(a, b); END$f$',
                       n, o.l, o.r, o.res, o.oprname || '(' || o.l || ', ' || o.r || ')', o.code);
        EXECUTE format('CREATE OPERATOR evil.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = evil.op_%s)',
                       o.oprname, o.l, o.r, n);
        n := n + 1;
    END LOOP;
END$$;
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('now()'); RETURN pg_catalog.now(); END$$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('clock_timestamp()'); RETURN pg_catalog.clock_timestamp(); END$$;
CREATE FUNCTION evil.random() RETURNS float8 LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('random()'); RETURN pg_catalog.random(); END$$;
CREATE FUNCTION evil.current_setting(text, boolean) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('current_setting()'); RETURN pg_catalog.current_setting($1, $2); END$$;
CREATE FUNCTION evil.jsonb_build_object(VARIADIC text[]) RETURNS jsonb LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('jsonb_build_object()'); RETURN '{}'::jsonb; END$$;
CREATE FUNCTION evil.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('gen_random_uuid()'); RETURN pg_catalog.gen_random_uuid(); END$$;
CREATE FUNCTION evil.length(text) RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('length()'); RETURN pg_catalog.length($1); END$$;
CREATE FUNCTION evil.lower(text) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog AS
    $$BEGIN PERFORM evil.trap('lower()'); RETURN pg_catalog.lower($1); END$$;

SELECT cmp_ok((SELECT count(*) FROM pg_operator WHERE oprnamespace = 'evil'::regnamespace), '>', 100::bigint,
              'the hostile schema plants over 100 operators');

-- The calls: every function in once, with a sample value per argument type, then with NULLs.
CREATE TEMP TABLE calls AS
SELECT p.oid::regprocedure AS fn, v.variant,
       format('SELECT %s(%s)', p.oid::regproc,
              (SELECT string_agg(CASE WHEN v.variant = 'nulls' THEN format('NULL::%s', t::regtype)
                                      ELSE CASE t::regtype::text
                                          WHEN 'text' THEN CASE WHEN p.proargnames[i] = 'command' THEN '''SELECT 1'''
                                                                WHEN p.proargnames[i] LIKE '%pattern%' THEN '''t.*'''
                                                                ELSE '''t.x''' END
                                          WHEN 'jsonb' THEN '''{"type": "x", "step": "s"}''::jsonb'
                                          WHEN 'integer' THEN '1'
                                          WHEN 'bigint' THEN '1::bigint'
                                          WHEN 'interval' THEN '''1 minute''::interval'
                                          WHEN 'timestamp with time zone' THEN '''2030-01-01''::timestamptz'
                                          WHEN 'boolean' THEN 'true'
                                          WHEN 'uuid' THEN '''01890000-0000-7000-8000-000000000001''::uuid'
                                          WHEN 'uuid[]' THEN 'ARRAY[''01890000-0000-7000-8000-000000000001'']::uuid[]'
                                          WHEN 'text[]' THEN 'ARRAY[''t.x'']::text[]'
                                          WHEN 'jsonb[]' THEN 'ARRAY[''{}''::jsonb]'
                                          ELSE format('NULL::%s', t::regtype) END END, ', ' ORDER BY i)
                 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, i))) AS stmt
  FROM pg_proc p
  CROSS JOIN (VALUES ('samples'), ('nulls')) AS v(variant)
 WHERE p.pronamespace = 'once'::regnamespace AND p.prokind = 'f'
   AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
   AND p.oid::regproc::text <> 'once.guard_selftest';   -- its modes raise errors on purpose

CREATE TEMP TABLE outcomes (fn regprocedure, variant text, sqlstate text, message text);
CREATE FUNCTION pg_temp.call_all() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    c record;
    st text;
    msg text;
BEGIN
    FOR c IN SELECT * FROM calls ORDER BY fn::text, variant LOOP
        BEGIN
            PERFORM pg_catalog.set_config('search_path', 'evil, pg_catalog, public', true);
            PERFORM pg_catalog.set_config('hostile.armed', 'on', true);
            EXECUTE c.stmt;
            PERFORM pg_catalog.set_config('hostile.armed', 'off', true);
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, public', true);
            INSERT INTO outcomes VALUES (c.fn, c.variant, '00000', NULL);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
            PERFORM pg_catalog.set_config('hostile.armed', 'off', true);
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, public', true);
            INSERT INTO outcomes VALUES (c.fn, c.variant, st, msg);
        END;
    END LOOP;
END
$f$;
SELECT pg_temp.call_all();

SELECT is((SELECT count(DISTINCT fn) FROM outcomes),
          (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'once'::regnamespace AND p.prokind = 'f'
              AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)) - 1,
          'every function in once was called (guard_selftest aside)');
SELECT is((SELECT string_agg(format('%s [%s]: %s', fn, variant, message), E'\n' ORDER BY fn::text)
             FROM outcomes WHERE sqlstate = 'HJ001' AND fn::text NOT LIKE 'once.saga_tick(%'),
          NULL, 'no function used an operator or function from the hostile search_path');
-- once.saga_tick on its own: it runs local step functions under the caller's search_path by
-- design, but its own statements must use nothing from it (0.1 used unqualified operators).
SELECT is((SELECT string_agg(format('%s [%s]: %s', fn, variant, message), E'\n' ORDER BY fn::text)
             FROM outcomes WHERE sqlstate = 'HJ001' AND fn::text LIKE 'once.saga_tick(%'),
          NULL, 'once.saga_tick uses nothing from the hostile search_path');

SELECT * FROM finish();
ROLLBACK;
