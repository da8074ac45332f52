-- Calls every function in schema "once" many times with hostile arguments chosen per type
-- (NULL, empty, oversized, malformed, extreme). Errors are expected and caught; a crashed
-- backend is the failure this test exists to find. The seed makes every run the same; the
-- NOTICE before each call names the culprit if the server dies.
SET client_min_messages = notice;
SET statement_timeout = 0;   -- applies to the whole DO block; lock_timeout guards against hangs
SET lock_timeout = '1s';
SELECT setseed(:seed);
SELECT set_config('fuzz.calls_per_function', :'calls_per_function', false);

CREATE TEMP TABLE fuzz_values (type regtype, expr text);
INSERT INTO fuzz_values VALUES
  ('text', 'NULL'), ('text', $$''$$), ('text', $$'a'$$), ('text', $$'order.created'$$),
  ('text', $$'order.*'$$), ('text', $$'order.>'$$), ('text', $$repeat('x', 256)$$),
  ('text', $$repeat('é', 200)$$), ('text', $$E'\t\n'$$), ('text', $$'>'$$), ('text', $$'*'$$),
  ('text', $$'succeeded'$$), ('text', $$'failed'$$), ('text', $$'compensated'$$),
  ('text', $$'SELECT 1'$$), ('text', $$'SELECT $1'$$), ('text', $$'{}'$$), ('text', $$repeat('y', 100000)$$),
  ('jsonb', 'NULL'), ('jsonb', $${}$$), ('jsonb', $$'[]'$$), ('jsonb', $$'null'$$), ('jsonb', $$'1'$$),
  ('jsonb', $$'"s"'$$), ('jsonb', $$'{"steps": []}'$$),
  ('jsonb', $$'{"steps": [{"name": "a", "action": {"topic": "x.y"}}]}'$$),
  ('jsonb', $$'{"steps": [{"name": "a", "action": {"function": "pg_catalog.now"}, "kind": "pivot", "timeout": "-1 s"}]}'$$),
  ('jsonb', $$'{"steps": [{"name": "a"}, {"name": "a"}]}'$$),
  ('jsonb', $$'{"steps": [{"name": null, "action": 5, "compensation": [], "max_attempts": -3}]}'$$),
  ('jsonb', $$repeat('[', 2000)::text || repeat(']', 2000)$$),
  ('jsonb', $$(SELECT jsonb_object_agg('k' || i, i) FROM generate_series(1, 5000) i)$$),
  ('jsonb', $$jsonb_build_object('payload', repeat('z', 2000000))$$),
  ('integer', 'NULL'), ('integer', '0'), ('integer', '-1'), ('integer', '1'), ('integer', '100'),
  ('integer', '2147483647'), ('integer', '(-2147483648)'), ('integer', '1000000'),
  ('bigint', 'NULL'), ('bigint', '0'), ('bigint', '-1'), ('bigint', '9223372036854775807'),
  ('interval', 'NULL'), ('interval', $$'0'$$), ('interval', $$'-1 second'$$), ('interval', $$'1 second'$$),
  ('interval', $$'1 month'$$), ('interval', $$'178000000 years'$$), ('interval', $$'1 microsecond'$$),
  ('uuid', 'NULL'), ('uuid', 'gen_random_uuid()'), ('uuid', $$'00000000-0000-0000-0000-000000000000'$$),
  ('uuid[]', 'NULL'), ('uuid[]', $$'{}'$$), ('uuid[]', 'ARRAY[NULL]::uuid[]'),
  ('uuid[]', '(SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 20000))'),
  ('text[]', 'NULL'), ('text[]', $$'{}'$$), ('text[]', 'ARRAY[NULL]::text[]'), ('text[]', $${"a.*", "order.>"}$$),
  ('text[]', $$'{"", "a..b"}'$$), ('text[]', $$(SELECT array_agg('k' || i) FROM generate_series(1, 5000) i)$$),
  ('jsonb[]', 'NULL'), ('jsonb[]', $$'{}'$$), ('jsonb[]', 'ARRAY[NULL]::jsonb[]'),
  ('jsonb[]', $$(SELECT array_agg(jsonb_build_object('i', i)) FROM generate_series(1, 3000) i)$$),
  ('timestamptz', 'NULL'), ('timestamptz', 'now()'), ('timestamptz', $$'infinity'$$),
  ('timestamptz', $$'-infinity'$$), ('timestamptz', $$'1970-01-01'$$),
  ('boolean', 'NULL'), ('boolean', 'true'), ('boolean', 'false'),
  ('regprocedure', 'NULL'), ('regprocedure', $$'pg_catalog.now()'::regprocedure$$),
  ('regprocedure', $$'pg_catalog.abs(integer)'::regprocedure$$);

-- One transaction, so its commit runs pg_once's pre-commit steps over everything the calls
-- left behind (keyed sends to order, messages taken by claim_locked and never settled).
BEGIN;
DO $fuzz$
DECLARE
    f record;
    args text[];
    t regtype;
    value text;
    call text;
    calls int := 0;
    errors int := 0;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure AS sig, p.proname, p.proargtypes::regtype[] AS types
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'once' AND p.prokind = 'f' AND p.prorettype <> 'trigger'::regtype
         ORDER BY 1::text
    LOOP
        FOR i IN 1 .. current_setting('fuzz.calls_per_function')::int LOOP
            args := '{}';
            FOREACH t IN ARRAY coalesce(f.types, '{}') LOOP
                SELECT expr INTO value FROM fuzz_values WHERE type = t ORDER BY random() LIMIT 1;
                IF value IS NULL THEN
                    -- composite and other types: NULL, or an all-NULL / plausible row
                    value := (ARRAY['NULL', 'ROW()', $$ROW('s', 'm', 't', '{}', '{}')$$])[1 + floor(random() * 3)::int];
                END IF;
                args := args || format('(%s)::%s', value, t);
            END LOOP;
            call := format('SELECT * FROM once.%I(%s)', f.proname, array_to_string(args, ', '));
            RAISE NOTICE 'fuzz call: %', left(call, 300);
            calls := calls + 1;
            BEGIN
                EXECUTE call;
            EXCEPTION WHEN OTHERS THEN
                errors := errors + 1;   -- expected: bad input must fail cleanly, not crash
            END;
        END LOOP;
    END LOOP;
    RAISE NOTICE 'fuzz done: % calls, % clean errors', calls, errors;
END
$fuzz$;
-- A clean error at commit is fine (ON213: the fuzz took messages with claim_locked and never
-- settled them); a crash is not, and shows as a lost session.
\set ON_ERROR_STOP 0
COMMIT;
