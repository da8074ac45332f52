-- The focused mode of tests/integration/sqlsmith.sh: sqlsmith reads the functions it may call
-- from an unqualified "pg_proc", so a view of that name earlier on the search_path than
-- pg_catalog narrows its choice to pg_once's functions and the built-in functions that make
-- pg_once's argument types from each other (text, jsonb, uuid, interval, ...). In the full
-- catalog pg_once's ~50 functions are lost among ~3,000 and random queries seldom call them.
CREATE SCHEMA smith_focus;
CREATE VIEW smith_focus.pg_proc AS
SELECT p.*
  FROM pg_catalog.pg_proc p,
       (SELECT ARRAY['text', 'jsonb', 'uuid', 'interval', 'timestamptz', 'int4', 'int8', 'bool',
                     'bytea', 'text[]', 'jsonb[]', 'uuid[]', 'regprocedure']::regtype[]::oid[] AS types) m
 WHERE p.pronamespace = 'once'::regnamespace
    OR (p.pronamespace = 'pg_catalog'::regnamespace
        AND p.prorettype = ANY (m.types)
        AND p.proargtypes::oid[] <@ m.types);
GRANT USAGE ON SCHEMA smith_focus TO PUBLIC;
GRANT SELECT ON smith_focus.pg_proc TO PUBLIC;
