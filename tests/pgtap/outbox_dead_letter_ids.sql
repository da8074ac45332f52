-- once.redrive and once.discard reject a bad ids argument alike (ON211), with detail and hint,
-- by the rule of every ids argument (a relay's too: outbox_args.hpp, message_ids).
BEGIN;
SELECT plan(9);

SELECT throws_ok($$SELECT once.redrive(NULL)$$, 'ON211', 'ids must not be NULL',
                 'redrive: NULL ids');
SELECT throws_ok($$SELECT once.redrive('{}')$$, 'ON211', NULL, 'redrive: empty ids');
SELECT throws_ok($$SELECT once.redrive(ARRAY[gen_random_uuid(), NULL])$$, 'ON211', NULL, 'redrive: NULL in ids');
SELECT throws_ok($$SELECT once.discard(NULL)$$, 'ON211', 'ids must not be NULL',
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
          'ids is an empty array. / Pass the ids of the messages, e.g. from once.dead_letters or once.blocked_keys.', 'redrive: detail and hint');
SELECT is(pg_temp.error_of($$SELECT once.discard('{}')$$),
          'ids is an empty array. / Pass the ids of the messages, e.g. from once.dead_letters or once.blocked_keys.', 'discard: detail and hint');

SELECT throws_ok($$SELECT once.redrive(ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 10001)))$$, 'ON211',
                 'too many ids', 'redrive: more than 10,000 ids, as for a relay''s ack');
SELECT * FROM finish();
ROLLBACK;
