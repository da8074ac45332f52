-- once.redrive and once.discard reject a bad ids argument alike (ON211), with detail and hint.
BEGIN;
SELECT plan(8);

SELECT throws_ok($$SELECT once.redrive(NULL)$$, 'ON211', 'ids must be a non-empty array without NULLs',
                 'redrive: NULL ids');
SELECT throws_ok($$SELECT once.redrive('{}')$$, 'ON211', NULL, 'redrive: empty ids');
SELECT throws_ok($$SELECT once.redrive(ARRAY[gen_random_uuid(), NULL])$$, 'ON211', NULL, 'redrive: NULL in ids');
SELECT throws_ok($$SELECT once.discard(NULL)$$, 'ON211', 'ids must be a non-empty array without NULLs',
                 'discard: NULL ids');
SELECT throws_ok($$SELECT once.discard('{}')$$, 'ON211', NULL, 'discard: empty ids');
SELECT throws_ok($$SELECT once.discard(ARRAY[NULL]::uuid[])$$, 'ON211', NULL, 'discard: NULL in ids');

CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE d text; h text;
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    RETURN d || ' / ' || h;
END
$f$;
SELECT is(pg_temp.error_of($$SELECT once.redrive('{}')$$),
          'ids was {}. / Pass the ids of dead letters, e.g. from once.dead_letters.', 'redrive: detail and hint');
SELECT is(pg_temp.error_of($$SELECT once.discard('{}')$$),
          'ids was {}. / Pass the ids of dead letters, e.g. from once.dead_letters.', 'discard: detail and hint');

SELECT * FROM finish();
ROLLBACK;
