-- The C++/PostgreSQL boundary: every kind of failure reaches SQL as a proper error with the
-- right SQLSTATE, C++ destructors run, and the backend survives to answer the next query.
BEGIN;
SELECT plan(7);

SELECT is(once.guard_selftest('ok'), 'ok', 'a normal call returns');
SELECT throws_ok($$SELECT once.guard_selftest('cpp_exception')$$, 'XX000',
    'pg_once internal error: a C++ exception', 'a C++ exception becomes internal_error (XX000)');
SELECT throws_ok($$SELECT once.guard_selftest('once_error')$$, 'ON101',
    'a pg_once error', 'a pg_once error keeps its own SQLSTATE');
SELECT throws_ok($$SELECT once.guard_selftest('bad_alloc')$$, '53200',
    'out of memory in pg_once', 'std::bad_alloc becomes out_of_memory (53200)');
SELECT throws_ok($$SELECT once.guard_selftest('pg_error')$$, '22012',
    'division by zero', 'a PostgreSQL error inside C++ frames keeps its SQLSTATE (22012)');
SELECT throws_ok($$SELECT once.guard_selftest('nonsense')$$, '22023',
    'unknown self-test mode', 'an unknown mode is invalid_parameter_value');
SELECT is(once.guard_selftest('ok'), 'ok', 'the backend survived every error above');

SELECT * FROM finish();
ROLLBACK;
