-- once.run's plan cache never frees a plan that is still executing.
-- On 0.1 the inner once.run calls filled the cache to its bound of 256 and the eviction
-- freed the outer command's plan while it ran: a use after free (valgrind: invalid read in
-- _SPI_execute_plan; without valgrind, wrong results or a crashed backend).
BEGIN;
SELECT plan(3);

DO $$BEGIN FOR i IN 1..255 LOOP PERFORM once.run('fill', 'k' || i, '{}', 'SELECT ' || i); END LOOP; END$$;

SELECT is((SELECT response FROM once.run('uaf', 'outer', '{}',
             $$SELECT count(r.response) FROM generate_series(1, 300) g,
               LATERAL once.run('uaf', 'in' || g, '{}', 'SELECT ' || g) r$$)),
          '300'::jsonb, 'an outer once.run survives 300 inner calls that overflow the plan cache');
SELECT is((SELECT sum((response #>> '{}')::int) FROM generate_series(1, 300) g,
             LATERAL once.run('uaf', 'in' || g, '{}', 'SELECT ' || g)),
          45150::bigint, 'every inner call stored its own command''s result');
-- The cache still works (and still evicts) after the nested overflow.
DO $$BEGIN FOR i IN 1..600 LOOP PERFORM once.run('after', 'k' || i, '{}', 'SELECT ' || i); END LOOP; END$$;
SELECT is((once.run('after', 'k600', '{}', 'SELECT 600')).response, '600'::jsonb,
          'the cache keeps evicting idle plans afterwards');

SELECT * FROM finish();
ROLLBACK;
