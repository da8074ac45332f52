-- Request fingerprints walk jsonb directly and must stay byte-for-byte
-- what 0.1 computed, or keys stored by 0.1 would no longer replay after the upgrade. The
-- expected values below were computed by the 0.1 library (JsonbToCString + core's parser).
-- Also: nesting near the stack limit is a clean error, never a crashed backend (on 0.1 a
-- caller already deep in the stack crashed the server), and a request is cancellable.
BEGIN;
SELECT plan(10);

CREATE TEMP TABLE corpus(j jsonb, expected text);
INSERT INTO corpus VALUES
  ('null'::jsonb, '74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b'),
  ('true'::jsonb, 'b5bea41b6c623f7c09f1bf24dcae58ebab3c0cdd90ad966bc43a45b44867e12b'),
  ('false'::jsonb, 'fcbcf165908dd18a9e49f7ff27810176db8e9f63b4352213741664245224f8aa'),
  ('0'::jsonb, '5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9'),
  ('0'::jsonb, '5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9'),
  ('1.50'::jsonb, '9f29a130438b81170b92a42650f9a94291ecad60bd47af2a3886e75f7f728725'),
  ('1.5'::jsonb, '9f29a130438b81170b92a42650f9a94291ecad60bd47af2a3886e75f7f728725'),
  ('100'::jsonb, 'ad57366865126e55649ecb23ae1d48887544976efea46a48eb5d85a6eeb4d306'),
  ('-12.3400'::jsonb, '07a8911b529519a3c6762a349fd6c92b12e9d20c770dd8ec509d779518d1f2ce'),
  ('10000000000000000000000000000000000000000'::jsonb, 'f084d3bf42d8f378c152b5032863544183d687d394c92f906fb40ff6399b9797'),
  ('100000000000000000000000000000000000000000'::jsonb, '85bf454317bb940d43aea68f904a95a936d3eeef8d54e3d8e1bd1e492945f9df'),
  ('0.00000000000000000000000000000000000000001'::jsonb, '2a923f695e66475a509bfa525364670f8e7ac39a6818678c7042f7c58c0ba177'),
  ('123456789012345678901234567890.000001'::jsonb, '5a633aadc37e40f1431c9479ef07ab2770096112b01e542342e90dcbbd159508'),
  ('0.000000000000000000000000000000000000000001'::jsonb, 'bfdf55bbb10a2ce3a564bd85374e95ff372cc56483c2cbea476faf0136b6a7db'),
  ('"plain"'::jsonb, '945603a8f587786b463c3f94fce115c0fae88fac2728cc96ddf5981cf7f61741'),
  ('""'::jsonb, '12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126'),
  ('"é ü 日本 😀"'::jsonb, '12fb9c076c1ea60fe1189d010c3e1d69ccb26e3f03b1ef3aecf6de193bfaf706'),
  ('"tab\there \"q\" back\\slash \u0001 \u001f "'::jsonb, '381a5da10c98581b77610082360f65f7679982f12f3df86519642271652f6609'),
  ('"\b\f\n\r\t/"'::jsonb, '0daafe08efba9336b603aba467273004c664ee645a31a07f92ae50b02badb6ed'),
  ('[]'::jsonb, '4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945'),
  ('{}'::jsonb, '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'),
  ('[[], {}, [[]], {"a": {}}]'::jsonb, 'ae1c85852e1ac94ba98efaf5e4620331958fface0ac9350d79f8952860ade5e7'),
  ('[1, "1", 1.0, true, null]'::jsonb, '80d4fcd0b0094fa963bfea02a72edf29fff6f044bf2b621dcedeff6319fd578d'),
  ('{"a": 2, "b": 1}'::jsonb, 'd3626ac30a87e6f7a6428233b3c68299976865fa5508e4267c5415c76af7a772'),
  ('{"a": 2}'::jsonb, '7e8059f495589fcd981232cc11d00b00da3802c01d688fa1cf1f6bed6e5bb33c'),
  ('{"": 5, "a": 3, "b": 2, "aa": 1, "ab": 4}'::jsonb, 'b0c81721343bdb6d386c2b793695a83ea18d7a207940bd817c5abe89a82bf7c9'),
  ('{"e": 2, "z": 3, "~": 7, "É": 4, "é": 1, "日": 5, "😀": 6}'::jsonb, '45df4cd7699689d170e9bb10e5a6c0056cee2e4ef64a2e027e1f979e625f1e2d'),
  ('{"a": true, "z": {"x": null, "y": [{"a": 0, "b": 1}]}}'::jsonb, '8ea0a20739900cc138376c92efae9e2805b0666203ca7172fcb374d3705aa7e2'),
  ('{"order": {"id": 42, "lines": [{"qty": 2, "sku": "A-1", "price": 9.90}, {"qty": 1, "sku": "B", "price": 100}]}, "currency": "EUR"}'::jsonb, 'f72b35ba77bf019d39ba9d0bf8c16dfa8452017dbc0e66e638724925f7d09d89'),
  ('{"ctl\u0002": "y", "key\\back": "x", "key\"quote": "w", "key with space": "v"}'::jsonb, 'b5ace50d3fbb192fe1e1de368e5e638eca48ec2da31bcd88435decedf6b36097');
SELECT is((SELECT count(*) FROM corpus WHERE encode(once.request_fingerprint(j), 'hex') <> expected), 0::bigint,
          'fingerprints of a hand-picked corpus equal those computed by 0.1');
SELECT is(encode(once.request_fingerprint(NULL), 'hex'), '74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b', 'a NULL request fingerprints as 0.1 did');

-- Deterministic pseudo-random documents (setseed), nested objects/arrays/numbers/strings.
SELECT setseed(0.42);
CREATE TEMP TABLE random_corpus AS
SELECT g, (SELECT jsonb_object_agg(
              chr(97 + (random() * 25 + i * 0)::int) || chr(65 + (random() * 60)::int) || repeat('é', (random() * 2)::int),
              CASE (random() * 5)::int
                WHEN 0 THEN to_jsonb(round((random() * 2000 - 1000)::numeric, (random() * 6)::int))
                WHEN 1 THEN to_jsonb(md5(random()::text) || chr(1 + (random() * 200)::int))
                WHEN 2 THEN jsonb_build_array(random() < 0.5, NULL, (random() * 1e6)::bigint, jsonb_build_object('x' || (random()*9)::int, 1e-3))
                WHEN 3 THEN jsonb_build_object('n', jsonb_build_object('m', jsonb_build_array(g, g * 1.5, -g)))
                ELSE to_jsonb((random() * 1e30)::numeric) END)
            FROM generate_series(1, 1 + (g % 12)) AS i) AS j
  FROM generate_series(1, 2000) g;

SELECT is((SELECT encode(sha256(string_agg(once.request_fingerprint(j), ''::bytea ORDER BY g)), 'hex') FROM random_corpus),
          'ef46caea237186b68829d29f43066462613d5ee86c10f2ebb235005563ec629b', 'fingerprints of 2000 generated documents equal those computed by 0.1');

-- Spelling does not matter (canonical form), content does.
SELECT is(once.request_fingerprint('{"b": [1.0, 2e0], "a": "x"}'), once.request_fingerprint('{"a":"x","b":[1,2]}'),
          'key order and number spelling do not change the fingerprint');
SELECT isnt(once.request_fingerprint('[1, 2]'), once.request_fingerprint('[2, 1]'), 'array order does');

-- Depth: 0.1 refused more than 1000 levels; jsonb itself accepts what the stack allows.
SELECT lives_ok($$SELECT once.request_fingerprint((repeat('[', 1001) || repeat(']', 1001))::jsonb)$$,
                'a 1001-deep request is fingerprinted');
SELECT lives_ok($$SELECT once.request_fingerprint((repeat('{"a":', 5000) || '1' || repeat('}', 5000))::jsonb)$$,
                'a 5000-deep object is fingerprinted');
-- A caller that is already deep in the stack: recurse until the
-- stack limit, then fingerprint a 1000-deep request from the deepest frame that still works.
-- 0.1's parser used ~516 KB of unchecked stack there and crashed the server; now the walk
-- checks the stack at every level, the deepest frames get 54001 and a shallower one succeeds.
SET max_stack_depth = '7680kB';
CREATE FUNCTION pg_temp.deep(n int, doc jsonb) RETURNS bytea LANGUAGE plpgsql AS $f$
BEGIN
    RETURN pg_temp.deep(n + 1, doc);
EXCEPTION WHEN statement_too_complex THEN
    RETURN once.request_fingerprint(doc);
END $f$;
SELECT is(pg_temp.deep(0, (repeat('[', 1000) || repeat(']', 1000))::jsonb),
          once.request_fingerprint((repeat('[', 1000) || repeat(']', 1000))::jsonb),
          'fingerprinting at the stack limit is a clean error that the caller can handle, not a crash');
RESET max_stack_depth;
SELECT ok(pg_backend_pid() IS NOT NULL, 'the backend is still alive');

-- Cancellable, also inside one big flat array. (throws_ok cannot catch a cancel: PL/pgSQL's
-- WHEN OTHERS excludes query_canceled.) 0.1 was cancelled only after the whole fingerprint.
CREATE TEMP TABLE big AS
    SELECT jsonb_agg(jsonb_build_object('i', g, 's', 'x' || g, 'n', g * 1.5)) AS j FROM generate_series(1, 1000000) g;
CREATE FUNCTION pg_temp.full_fingerprint_ms() RETURNS float8 LANGUAGE plpgsql AS $f$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM once.request_fingerprint(j) FROM big;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $f$;
CREATE FUNCTION pg_temp.cancelled_after_ms() RETURNS float8 LANGUAGE plpgsql AS $f$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM once.request_fingerprint(j) FROM big;
    RETURN NULL;
EXCEPTION WHEN query_canceled THEN
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $f$;
CREATE TEMP TABLE full_ms AS SELECT pg_temp.full_fingerprint_ms() AS ms;
SET statement_timeout = '5ms';
CREATE TEMP TABLE cancel_ms AS SELECT pg_temp.cancelled_after_ms() AS ms;
RESET statement_timeout;
SELECT cmp_ok((SELECT ms FROM cancel_ms), '<', (SELECT ms / 2 FROM full_ms),
              'statement_timeout cancels the fingerprint of a 1M-element request midway');

SELECT * FROM finish();
ROLLBACK;
