-- The WAL transport's fences are per slot: a keyed message a relay writes back is
-- fenced for the slot it was read from (once.outbox.stream_fence_slot), and only that slot's
-- confirmation releases it (once.wal_release_fences(slot, confirmed)): relay groups split by
-- topic each stream their own slot, and one group's confirmation says nothing about another's
-- stream. A fence whose slot no longer exists is released by any call. wal_fenced_keys lists
-- one slot's keys. Only once_relay may call them. (Physical slots stand for the relays'
-- logical ones: the functions only look the names up.)
BEGIN;
SELECT plan(19);

CREATE ROLE wf_relay;
GRANT once_relay TO wf_relay;
CREATE ROLE wf_producer;
GRANT once_producer TO wf_producer;
SELECT slot_name FROM pg_create_physical_replication_slot('wf_a') \gset
SELECT slot_name FROM pg_create_physical_replication_slot('wf_b') \gset

CREATE FUNCTION pg_temp.wf_id(n int) RETURNS uuid LANGUAGE sql
AS $$ SELECT ('0190b2c4-0000-7000-8000-' || lpad(n::text, 12, '0'))::uuid $$;
GRANT EXECUTE ON FUNCTION pg_temp.wf_id(int) TO PUBLIC;
-- Write back message n of `key` (0 attempts: due at once), fenced for `slot`, as the relay.
CREATE FUNCTION pg_temp.wb(n int, key text, slot name) RETURNS boolean LANGUAGE sql
AS $$ SELECT once.wal_write_back(ROW(pg_temp.wf_id(n), 'wf.t', key, '{}', NULL, now(), 0, NULL, false,
                                 10::oid, pg_temp.wf_id(n), slot, NULL, NULL)::once.wal_write_back_message) $$;
GRANT EXECUTE ON FUNCTION pg_temp.wb(int, text, name) TO PUBLIC;
CREATE FUNCTION pg_temp.fenced() RETURNS text LANGUAGE sql
AS $$ SELECT coalesce(string_agg(key || '@' || stream_fence_slot, ',' ORDER BY key), '')
        FROM once.outbox WHERE stream_fence IS NOT NULL $$;

SET ROLE wf_relay;
SELECT ok(pg_temp.wb(1, 'ka', 'wf_a'), 'group A''s relay writes back a message of key ka');
SELECT ok(pg_temp.wb(2, 'kb', 'wf_b'), 'group B''s relay writes back a message of key kb');
RESET ROLE;
SELECT is(pg_temp.fenced(), 'ka@wf_a,kb@wf_b', 'each is fenced for the slot of the relay that wrote it back');
SELECT is((SELECT stream_fence_slot FROM once.outbox WHERE id = pg_temp.wf_id(1)), 'wf_a'::name,
          '... in once.outbox.stream_fence_slot');

SET ROLE wf_relay;
SELECT is((SELECT array_agg(key) FROM once.wal_fenced_keys('wf_a')), ARRAY['ka'], 'wal_fenced_keys lists one slot''s keys (A)');
SELECT is((SELECT array_agg(key) FROM once.wal_fenced_keys('wf_b')), ARRAY['kb'], '... (B)');
SELECT is(once.wal_release_fences('wf_a', pg_current_wal_insert_lsn()), 0,
          'A''s confirmation past both fences releases A''s (none of A''s left)');
RESET ROLE;
SELECT is(pg_temp.fenced(), 'kb@wf_b', '... and leaves B''s fence in place');
SELECT is((SELECT count(*) FROM once.claim('r', 10, topics => '{wf.t}')), 1::bigint, 'ka is claimable; kb is not');
SET ROLE wf_relay;
SELECT is(once.wal_release_fences('wf_b', '0/0'), 1, 'B''s confirmation below its fence releases nothing');

-- A slot that is gone (its group given up) releases nothing itself: any relay's call does.
SELECT ok(pg_temp.wb(3, 'kc', 'wf_gone'), 'a write-back fenced for a slot that does not exist');
SELECT is(once.wal_release_fences('wf_b', '0/0'), 1, 'any relay''s release frees a fence whose slot no longer exists');
RESET ROLE;
SELECT is(pg_temp.fenced(), 'kb@wf_b', '... B''s stays');
SET ROLE wf_relay;
SELECT is(once.wal_release_fences('wf_b', pg_current_wal_insert_lsn()), 0, 'B''s confirmation past its fence releases it');
RESET ROLE;
SELECT is((SELECT count(*) FROM once.outbox WHERE stream_fence_slot IS NOT NULL), 0::bigint,
          'a released row names no slot');

-- Bad arguments; privileges.
SET ROLE wf_relay;
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wf_id(4), 'wf.t', 'k', '{}', NULL, now(), 1, NULL, false,
                                             10::oid, gen_random_uuid(), NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'a keyed message needs the slot of the relay writing it back', 'a keyed write-back needs the slot');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(pg_temp.wf_id(4), 'wf.t', NULL, '{}', NULL, now(), 1, NULL, false,
                                             NULL, NULL, 'wf_a', NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'key_owner, key_seq and slot need a key', 'a slot without a key is refused');
RESET ROLE;
SET ROLE wf_producer;
SELECT throws_ok($$SELECT once.wal_release_fences('wf_a', '0/0')$$, '42501', NULL, 'a producer cannot release fences');
RESET ROLE;
SELECT ok(NOT has_function_privilege('public', 'once.wal_release_fences(name, pg_lsn)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'once.wal_fenced_keys(name)', 'EXECUTE')
          AND has_function_privilege('once_relay', 'once.wal_release_fences(name, pg_lsn)', 'EXECUTE')
          AND has_function_privilege('once_relay', 'once.wal_fenced_keys(name)', 'EXECUTE')
          AND to_regprocedure('once.wal_release_fences(pg_lsn)') IS NULL AND to_regprocedure('once.wal_fenced_keys()') IS NULL,
          'only once_relay may call the per-slot functions; the slotless ones are gone');

SELECT pg_drop_replication_slot('wf_a') \gset
SELECT pg_drop_replication_slot('wf_b') \gset
SELECT * FROM finish();
ROLLBACK;
