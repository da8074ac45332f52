-- once.run: in-transaction idempotent commands.
BEGIN;
SELECT plan(44);

CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL, qty int NOT NULL);
CREATE FUNCTION order_count() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM orders';
CREATE FUNCTION key_count() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM once.keys';

-- First call runs the command; retries replay the stored response.
SELECT results_eq(
    $$SELECT replayed, response FROM once.run('orders', 'k1', '{"item": "latte", "qty": 1}',
        $c$INSERT INTO orders (item, qty) VALUES ($1->>'item', ($1->>'qty')::int) RETURNING id$c$)$$,
    $$VALUES (false, '1'::jsonb)$$, 'first call runs the command and returns its value');
SELECT results_eq(
    $$SELECT replayed, response FROM once.run('orders', 'k1', '{"item": "latte", "qty": 1}',
        $c$INSERT INTO orders (item, qty) VALUES ($1->>'item', ($1->>'qty')::int) RETURNING id$c$)$$,
    $$VALUES (true, '1'::jsonb)$$, 'a retry replays the stored response');
SELECT is(order_count(), 1::bigint, 'the side effect happened once');

-- The fingerprint is over canonical JSON: key order, whitespace and number spelling do not matter.
SELECT results_eq(
    $$SELECT replayed FROM once.run('orders', 'k1', '{ "qty" : 1.0, "item":"latte" }',
        $c$INSERT INTO orders (item, qty) VALUES ($1->>'item', ($1->>'qty')::int) RETURNING id$c$)$$,
    $$VALUES (true)$$, 'the same request spelled differently replays');
SELECT is(once.request_fingerprint('{"b": [1, 2.50], "a": "\u00e9"}'),
          once.request_fingerprint('{"a": "é", "b": [1.0, 2.5]}'), 'fingerprints are canonical');
SELECT isnt(once.request_fingerprint('{"b": [2, 1]}'), once.request_fingerprint('{"b": [1, 2]}'),
            'array order matters');
SELECT is(length(once.request_fingerprint('{}')), 32, 'fingerprints are SHA-256');

-- Same key, other request: its own SQLSTATE, nothing written.
SELECT throws_ok(
    $$SELECT * FROM once.run('orders', 'k1', '{"item": "latte", "qty": 2}', 'SELECT 1')$$,
    'ON102', 'idempotency key was already used with a different request',
    'same key with another request is refused (ON102)');
SELECT is(order_count(), 1::bigint, 'the refused call ran nothing');

-- Scope separates keys.
SELECT results_eq(
    $$SELECT replayed FROM once.run('invoices', 'k1', '{"item": "latte", "qty": 2}', 'SELECT 7')$$,
    $$VALUES (false)$$, 'the same key in another scope is another key');

-- A failing command stores nothing and its own error reaches the caller.
SELECT throws_ok($$SELECT * FROM once.run('orders', 'k2', '{}', 'SELECT 1/0')$$, '22012', NULL,
                 'a failing command raises its own error (22012)');
SELECT throws_ok(
    $$SELECT * FROM once.run('orders', 'k2', '{}', $c$INSERT INTO orders (item, qty) VALUES (NULL, 1) RETURNING id$c$)$$,
    '23502', NULL, 'a constraint violation in the command keeps its SQLSTATE (23502)');
SELECT is((SELECT count(*) FROM once.keys WHERE key = 'k2'), 0::bigint, 'a failed command stored no key');
SELECT results_eq($$SELECT replayed, response FROM once.run('orders', 'k2', '{}', 'SELECT 2')$$,
                  $$VALUES (false, '2'::jsonb)$$, 'after a failure the key runs again');

-- A rolled-back caller forgets everything.
SAVEPOINT before_rollback;
SELECT * FROM once.run('orders', 'k3', '{"item": "tea", "qty": 1}',
    $c$INSERT INTO orders (item, qty) VALUES ($1->>'item', 1) RETURNING id$c$);
ROLLBACK TO SAVEPOINT before_rollback;
SELECT results_eq(
    $$SELECT replayed FROM once.run('orders', 'k3', '{"item": "tea", "qty": 1}',
        $c$INSERT INTO orders (item, qty) VALUES ($1->>'item', 1) RETURNING id$c$)$$,
    $$VALUES (false)$$, 'after the caller rolled back, the key runs again');
SELECT is((SELECT count(*) FROM orders WHERE item = 'tea'), 1::bigint, 'and its effect exists once');

-- Values of any type are stored as jsonb.
SELECT is((once.run('t', 'text', '{}', $$SELECT 'x'::text$$)).response, '"x"'::jsonb, 'text becomes a JSON string');
SELECT is((once.run('t', 'num', '{}', 'SELECT 4.50::numeric')).response, '4.50'::jsonb, 'numbers stay numbers');
SELECT is((once.run('t', 'obj', '{"a": 1}', 'SELECT $1 || ''{"b": 2}''')).response, '{"a": 1, "b": 2}'::jsonb,
          'jsonb is stored as it is; $1 is the request');
SELECT is((once.run('t', 'null', '{}', 'SELECT NULL::int')).response, NULL, 'a NULL value is stored as NULL');
SELECT results_eq($$SELECT replayed, response FROM once.run('t', 'null', '{}', 'SELECT NULL::int')$$,
                  $$VALUES (true, NULL::jsonb)$$, 'and replays as NULL');
SELECT is((once.run('t', 'semi', '{}', 'SELECT 5;  ')).response, '5'::jsonb, 'a trailing semicolon is fine');
SELECT is((once.run('t', 'comment', '{}', 'SELECT 6 -- six')).response, '6'::jsonb, 'a trailing comment is fine');
SELECT is((once.run('t', 'nullreq', NULL, 'SELECT $1')).response, NULL, 'a NULL request reaches the command as NULL');
SELECT is((once.run('t', 'nullreq', 'null', 'SELECT 1')).replayed, true, 'and fingerprints like JSON null');

-- The command must return exactly one row with one column.
SELECT throws_ok($$SELECT * FROM once.run('t', 'shape1', '{}', 'SELECT 1, 2')$$, 'ON105', NULL, 'two columns: ON105');
SELECT throws_ok($$SELECT * FROM once.run('t', 'shape2', '{}', 'SELECT 1 WHERE false')$$, 'ON105', NULL, 'no row: ON105');
SELECT throws_ok($$SELECT * FROM once.run('t', 'shape3', '{}', 'SELECT generate_series(1, 2)')$$, 'ON105', NULL, 'two rows: ON105');
SELECT throws_ok($$SELECT * FROM once.run('t', 'shape4', '{}', 'UPDATE orders SET qty = qty')$$, 'ON105', NULL, 'no RETURNING: ON105');
SELECT throws_ok($$SELECT * FROM once.run('t', 'shape5', '{}', 'SELECT 1; SELECT 2')$$, 'ON105', NULL, 'two statements: ON105');
SELECT throws_ok($$SELECT * FROM once.run('t', 'shape6', '{}', 'SELEC 1')$$, '42601', NULL, 'a syntax error keeps 42601');

-- Bad input: clear errors, own SQLSTATEs.
SELECT throws_ok($$SELECT * FROM once.run(NULL, 'k', '{}', 'SELECT 1')$$, 'ON101', NULL, 'NULL scope: ON101');
SELECT throws_ok($$SELECT * FROM once.run('s', NULL, '{}', 'SELECT 1')$$, 'ON101', NULL, 'NULL key: ON101');
SELECT throws_ok($$SELECT * FROM once.run('s', '', '{}', 'SELECT 1')$$, 'ON101', 'idempotency key must not be empty', 'empty key: ON101');
SELECT throws_ok($$SELECT * FROM once.run('s', repeat('k', 256), '{}', 'SELECT 1')$$, 'ON101', 'idempotency key is too long', '256-byte key: ON101');
SELECT lives_ok($$SELECT * FROM once.run('s', repeat('k', 255), '{}', 'SELECT 1')$$, '255-byte key is fine');
SELECT throws_ok($$SELECT * FROM once.run('s', E'a\nb', '{}', 'SELECT 1')$$, 'ON101', NULL, 'control character: ON101');
SELECT throws_ok($$SELECT * FROM once.run('s', 'k', '{}', NULL)$$, '22023', NULL, 'NULL command: 22023');
SELECT throws_ok($$SELECT * FROM once.run('s', 'k', '{}', ' ; ')$$, '22023', NULL, 'empty command: 22023');
SELECT throws_ok($$SELECT * FROM once.run('s', 'k', '{}', 'SELECT 1', '0 seconds')$$, '22023', 'ttl must be positive', 'zero ttl: 22023');

-- ttl is bounded by once.max_key_ttl (a key stored for 200,000 years would make
-- its (scope, key) unusable for the rightful owner for ever), checked as applied.
SELECT throws_ok($$SELECT * FROM once.run('s', 'squat', '{}', 'SELECT 1', '200000 years')$$, '22023',
    'ttl is longer than once.max_key_ttl allows', 'a ttl of 200,000 years is refused');
SELECT throws_ok($$SELECT * FROM once.key_acquire('s', 'squat', '{}', '1 minute', '31 days')$$, '22023',
    'ttl is longer than once.max_key_ttl allows', 'key_acquire: a ttl over the 30-day default bound is refused');
SELECT throws_ok($$SELECT * FROM once.run('s', 'squat', '{}', 'SELECT 1', interval '1 mon -31 days')$$, '22023',
    'ttl must be positive', 'a ttl of "1 mon -31 days" is checked as applied (at most zero), not as -1 day');
SET LOCAL once.max_key_ttl = '400d';
SELECT is((SELECT replayed FROM once.run('s', 'long', '{}', 'SELECT 1', '365 days')), false,
    'a superuser raises once.max_key_ttl and a year-long ttl is accepted');
SELECT * FROM finish();
ROLLBACK;
