-- Checks of outbox_wal_keyed.sh (which sent the messages): what the slot holds, what the table
-- holds, and the write-back's fence. Format version 2 (core/wal_message.hpp): version, id,
-- created_at, topic, key, key_owner (u32), key_seq (16 bytes), headers, payload, tag.
BEGIN;
SELECT plan(28);

CREATE FUNCTION pg_temp.u16(b bytea, at int) RETURNS int LANGUAGE sql
AS $$ SELECT get_byte(b, at) * 256 + get_byte(b, at + 1) $$;
-- The fields of one message's content (0-based offsets into the bytea).
CREATE FUNCTION pg_temp.fields(c bytea, OUT version int, OUT id uuid, OUT topic text, OUT key text,
                               OUT key_owner bigint, OUT key_seq uuid) LANGUAGE plpgsql AS $$
DECLARE
    at int := 25;
    n int;
BEGIN
    version := get_byte(c, 0);
    id := encode(substring(c FROM 2 FOR 16), 'hex')::uuid;
    n := pg_temp.u16(c, at);
    topic := convert_from(substring(c FROM at + 3 FOR n), 'UTF8');
    at := at + 2 + n;
    n := pg_temp.u16(c, at);
    IF n <> 65535 THEN
        key := convert_from(substring(c FROM at + 3 FOR n), 'UTF8');
        at := at + 2 + n;
        IF version = 2 THEN
            key_owner := ('x' || encode(substring(c FROM at + 1 FOR 4), 'hex'))::bit(32)::bigint;
            key_seq := encode(substring(c FROM at + 5 FOR 16), 'hex')::uuid;
        END IF;
    END IF;
END
$$;
CREATE TEMP TABLE wal AS
SELECT row_number() OVER () AS n, (pg_temp.fields(substring(data FROM 23))).*
  FROM pg_logical_slot_peek_binary_changes('wk_slot', NULL, NULL, 'proto_version', '1',
                                           'publication_names', 'wk_pub', 'messages', 'true')
 WHERE get_byte(data, 0) = ascii('M') AND substring(data FROM 11 FOR 8) = '\x70675f6f6e636500'::bytea;
CREATE FUNCTION pg_temp.id(name text) RETURNS uuid LANGUAGE sql AS $$ SELECT id FROM ids WHERE ids.name = $1 $$;

SELECT is((SELECT ROW(version, topic, key, key_owner)::text FROM wal WHERE id = pg_temp.id('first')),
          ROW(2, 'wk.first', 'k1', 'postgres'::regrole::oid::bigint)::text,
          'a keyed send rides the WAL: format version 2 with the key and the sending role');
SELECT is((SELECT count(*) FROM once.outbox WHERE key IN ('k1', 'k2', 'k5', 'k7', 'k8')), 0::bigint,
          '... and keyed messages whose key the table did not hold left no row');
SELECT ok((SELECT key_seq IS NOT NULL AND key_seq <> '00000000-0000-0000-0000-000000000000' FROM wal
            WHERE id = pg_temp.id('first')), '... with a key_seq');
SELECT is((SELECT array_agg(id ORDER BY n) FROM wal WHERE key = 'k2'),
          ARRAY[pg_temp.id('two_a'), pg_temp.id('two_b')], 'two sends of a key in one transaction: in send order');
SELECT ok((SELECT (array_agg(key_seq ORDER BY n))[1] < (array_agg(key_seq ORDER BY n))[2] FROM wal WHERE key = 'k2'),
          '... with increasing key_seqs');

SELECT is((SELECT count(*) FROM wal WHERE key = 'k3'), 0::bigint,
          'a key the table holds (a delayed message) does not ride the WAL');
SELECT is((SELECT array_agg(id ORDER BY key_seq) FROM once.outbox WHERE key = 'k3'),
          ARRAY[pg_temp.id('delayed'), pg_temp.id('after_delayed')],
          '... the next message of the key is a row behind it ("a key has one home at a time")');
SELECT ok((SELECT pos = 'ffffffff-ffff-ffff-ffff-ffffffffffff' FROM once.outbox WHERE id = pg_temp.id('after_delayed')),
          '... and waits behind the delayed one, as a table send would');

SELECT is((SELECT count(*) FROM once.outbox WHERE id = pg_temp.id('after_old')), 1::bigint,
          'behind a message of its key sent before 0.3 (owner 0) a keyed message is a row too');
SELECT is((SELECT count(*) FROM wal WHERE topic IN ('wk.rolled_back', 'wk.sub_aborted')), 0::bigint,
          'nothing of a rolled-back transaction or an aborted subtransaction');
SELECT is((SELECT count(*) FROM wal WHERE id = pg_temp.id('sub_kept')), 1::bigint,
          '... while the subtransaction''s sibling that committed is there');
SELECT is((SELECT count(*) FROM once.outbox WHERE topic IN ('wk.rolled_back', 'wk.sub_aborted')), 0::bigint,
          '... and no row of them either');

SELECT is((SELECT count(*) FROM wal WHERE id = pg_temp.id('prepared')), 0::bigint,
          'a prepared transaction''s keyed message stays off the stream');
SELECT is((SELECT key FROM once.outbox WHERE id = pg_temp.id('prepared')), 'k6',
          '... it is a row (a prepared transaction''s fate is open for an unbounded time)');

SELECT is((SELECT array_agg(ROW(id, version, key)::text ORDER BY n) FROM wal WHERE topic = 'wk.many'),
          ARRAY[ROW(pg_temp.id('many_2'), 1, NULL)::text, ROW(pg_temp.id('many_1'), 2, 'k8')::text,
                ROW(pg_temp.id('many_3'), 2, 'k8')::text],
          'send_many: the unkeyed element is emitted at once (version 1), the keyed ones at commit (version 2)');
SELECT ok((SELECT (array_agg(key_seq ORDER BY n))[1] < (array_agg(key_seq ORDER BY n))[2] FROM wal WHERE key = 'k8'),
          '... the keyed ones in array order');

-- Two sessions of key k7: B sent first, A sent and committed, then B committed.
SELECT ok(pg_temp.id('k7_b') < pg_temp.id('k7_a'), 'k7: B generated its id (its provisional key_seq) first');
SELECT is((SELECT array_agg(id ORDER BY n) FROM wal WHERE key = 'k7'), ARRAY[pg_temp.id('k7_a'), pg_temp.id('k7_b')],
          '... A committed first: the stream has A then B');
SELECT ok((SELECT (array_agg(key_seq ORDER BY n))[1] < (array_agg(key_seq ORDER BY n))[2] FROM wal WHERE key = 'k7'),
          '... and B''s key_seq comes after A''s, though A''s message never was a row');

-- The relay writes k1's message back (its sink refused it): fenced, with the carried order.
CREATE ROLE wk_relay;
GRANT once_relay TO wk_relay;
SELECT key_seq AS k1_seq, id AS first_id FROM wal WHERE id = pg_temp.id('first') \gset
SET ROLE wk_relay;
SELECT ok(once.wal_write_back(ROW(:'first_id', 'wk.first', 'k1', '{"n": 1}', NULL, now(), 0,
                              NULL, false, 'postgres'::regrole::oid, :'k1_seq', 'wk_slot', NULL, NULL)::once.wal_write_back_message),
          'once.wal_write_back takes a keyed message with its key_owner and key_seq');
RESET ROLE;
SELECT ok((SELECT stream_fence IS NOT NULL AND key_seq = :'k1_seq' AND key_owner = 'postgres'::regrole::oid
             AND visible_at <= now() FROM once.outbox WHERE id = pg_temp.id('first')),
          '... the row keeps the carried key_seq and owner, due at once (0 attempts), and is fenced');
SELECT is((SELECT reason FROM once.blocked_keys WHERE key = 'k1'), 'fenced', 'once.blocked_keys shows the key as fenced');
SELECT is((SELECT count(*) FROM once.claim('r', 10, topics => '{wk.first}')), 0::bigint,
          'a fenced row is not claimed, though due');
SET ROLE wk_relay;
SELECT is(once.wal_release_fences('wk_slot', '0/0'), 1, 'releasing below the fence releases nothing (one row stays fenced)');
SELECT is(once.wal_release_fences('wk_slot', pg_current_wal_insert_lsn()), 0, 'releasing at or past the fence releases it');
RESET ROLE;
SELECT is((SELECT array_agg(id) FROM once.claim('r', 10, topics => '{wk.first}')), ARRAY[pg_temp.id('first')],
          '... and then it is claimed');
SELECT throws_ok($$SELECT once.wal_write_back(ROW(gen_random_uuid(), 'wk.x', 'k', '{}', NULL, now(), 1, NULL, false, NULL, NULL, NULL, NULL, NULL)::once.wal_write_back_message)$$,
                 '22023', 'a keyed message needs its key_owner and key_seq', 'a key without its order is refused');
SELECT ok(NOT has_function_privilege('public', 'once.wal_release_fences(name, pg_lsn)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'once.wal_key_in_table(text, oid)', 'EXECUTE'),
          'only once_relay may release fences or ask for keys');

SELECT * FROM finish();
ROLLBACK;
