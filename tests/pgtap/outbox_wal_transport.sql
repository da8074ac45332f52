-- once.transport = 'wal' (the producer side of the WAL transport): an unkeyed,
-- undelayed once.send without message_id writes no row but a transactional logical decoding
-- message with prefix pg_once whose content is the documented wire format
-- (extension/src/core/wal_message.hpp), tagged with HMAC-SHA256 under the database's key
-- (once.wal_secret, readable by once_relay only); an explicit message_id and unkeyed
-- once.send_many ride the WAL too, with the ids once.send / send_many return; keyed and delayed
-- messages stay in the table (keyed ones because this cluster does not preload pg_once: there
-- is no shared memory for their key_seq; tests/integration/outbox_wal_keyed.sh preloads it); a read-only transaction cannot send; only a superuser sets the transport.
-- tests/pgtap/run.sh starts its server with wal_level = logical.
-- The slot is created and the sends commit before the test's transaction: a logical slot
-- cannot be created in a transaction that has written, and decoding shows only committed
-- transactions. The slot is dropped at the end, so it holds no WAL for the files after this.
CREATE PUBLICATION once_wal_pgtap;
SELECT pg_create_logical_replication_slot('once_wal_transport', 'pgoutput') IS NOT NULL AS slot_created \gset
-- pg_once's library is loaded by the first once.send: this SET lands on a placeholder first.
SET once.transport = 'wal';
SELECT once.send('wal.unkeyed', '{"n": 1}', headers => '{"h": "v"}') AS wal_id \gset
-- A second one in the same session: the backend's HMAC context is re-used (wal_message_tag.cpp).
SELECT once.send('wal.second', '{"n": 7}') AS second_id \gset
SELECT once.send('wal.keyed', '{"n": 2}', key => 'k') AS keyed_id \gset
SELECT once.send('wal.delayed', '{"n": 3}', deliver_at => now() + interval '1 hour') AS delayed_id \gset
SELECT once.send('wal.explicit', '{"n": 4}', message_id => 'a1b2c3d4-0000-4000-8000-000000000004') AS explicit_id \gset
-- A repeat of the explicit id: the stream has no ON CONFLICT, it is a second message of that id.
SELECT once.send('wal.explicit', '{"n": 4}', message_id => 'a1b2c3d4-0000-4000-8000-000000000004') AS explicit_again \gset
CREATE TEMP TABLE many_ids AS SELECT array_agg(id ORDER BY id) AS ids
  FROM once.send_many('wal.many', ARRAY['{"m": 1}', '{"m": 2}']::jsonb[], keys => ARRAY[NULL, NULL]::text[]) id;
SELECT ids AS many_ids FROM many_ids \gset
CREATE TEMP TABLE many_keyed_ids AS SELECT array_agg(id) AS ids
  FROM once.send_many('wal.many_keyed', ARRAY['{"m": 3}', '{"m": 4}']::jsonb[], keys => ARRAY['k', NULL]) id;
BEGIN;
SELECT once.send('wal.rolled_back', '{"n": 5}') AS rolled_back_id \gset
ROLLBACK;
RESET once.transport;
SELECT once.send('table.after_reset', '{"n": 6}') AS table_id \gset

BEGIN;
SELECT plan(31);

-- pgoutput's Message: 'M', flags, LSN (8 bytes), prefix and NUL, content length (4), content.
CREATE TEMP TABLE wal_all AS
SELECT xid, get_byte(data, 1) AS flags, substring(data FROM 23) AS content
  FROM pg_logical_slot_peek_binary_changes('once_wal_transport', NULL, NULL, 'proto_version', '1',
                                           'publication_names', 'once_wal_pgtap', 'messages', 'true')
 WHERE get_byte(data, 0) = ascii('M') AND substring(data FROM 11 FOR 8) = '\x70675f6f6e636500'::bytea;
CREATE TEMP TABLE wal_messages AS  -- the first one
SELECT * FROM wal_all WHERE substring(content FROM 2 FOR 16) = uuid_send(:'wal_id');

SELECT is((SELECT count(*) FROM once.outbox WHERE id = :'wal_id'), 0::bigint,
          'an unkeyed send in wal mode writes no outbox row');
SELECT is((SELECT count(*) FROM wal_messages), 1::bigint, 'the slot holds the committed unkeyed message');
SELECT is((SELECT count(*) FROM wal_all WHERE substring(content FROM 2 FOR 16) = uuid_send(:'second_id')), 1::bigint,
          '... and the second');
SELECT is((SELECT count(*) FROM wal_all), 6::bigint,
          '... six pg_once messages in all (two sends, the explicit id twice, two of send_many), not the rolled-back one');
SELECT is((SELECT count(*) FROM wal_all
            WHERE substring(content FROM 2 FOR 16) = uuid_send(:'explicit_id')), 2::bigint,
          'an explicit message_id rides the WAL with the id once.send returned (the derived one), once per send');
SELECT isnt(:'explicit_id'::uuid, 'a1b2c3d4-0000-4000-8000-000000000004'::uuid,
            '... which is the role-scoped id, not the caller''s');
SELECT is((SELECT array_agg(substring(content FROM 2 FOR 16) ORDER BY substring(content FROM 2 FOR 16)) FROM wal_all
            WHERE substring(content FROM 28 FOR 8) = convert_to('wal.many', 'UTF8')),
          (SELECT array_agg(uuid_send(i) ORDER BY uuid_send(i)) FROM unnest(:'many_ids'::uuid[]) i),
          'unkeyed send_many writes one WAL message per payload, with the ids it returned');
SELECT is((SELECT count(*) FROM once.outbox WHERE id = ANY (:'many_ids'::uuid[]) OR id = :'explicit_id'), 0::bigint,
          '... and no outbox row, nor for the explicit id');
SELECT is((SELECT flags FROM wal_messages), 1, 'the message is transactional');
SELECT is((SELECT substring(content FROM 1 FOR 17) FROM wal_messages), '\x01'::bytea || uuid_send(:'wal_id'),
          'its content starts with format version 1 and the id once.send returned');
SELECT cmp_ok((SELECT ('x' || encode(substring(content FROM 18 FOR 8), 'hex'))::bit(64)::bigint FROM wal_messages),
              '>', ((extract(epoch FROM now()) - 600) * 1000000)::bigint,
              'created_at is microseconds since the Unix epoch, of the sending transaction (not long ago)');
SELECT cmp_ok((SELECT ('x' || encode(substring(content FROM 18 FOR 8), 'hex'))::bit(64)::bigint FROM wal_messages),
              '<=', (extract(epoch FROM now()) * 1000000)::bigint, '... and not in the future');
SELECT is((SELECT substring(content FROM 26 FOR octet_length(content) - 25 - 16) FROM wal_messages),
          int2send(11::int2) || convert_to('wal.unkeyed', 'UTF8') || '\xffff'::bytea
          || int4send(10) || convert_to('{"h": "v"}', 'UTF8') || int4send(8) || convert_to('{"n": 1}', 'UTF8'),
          'then the topic, no key, the headers and the payload as jsonb prints them, then the 16-byte tag');

-- HMAC-SHA256 (RFC 2104) in SQL from sha256(), independent of both implementations: the
-- extension's (PostgreSQL's common/hmac.h) and the relay's (OpenSSL).
CREATE FUNCTION pg_temp.hmac_sha256(key bytea, msg bytea) RETURNS bytea LANGUAGE sql AS $$
  WITH k AS (SELECT key || decode(repeat('00', 64 - octet_length(key)), 'hex') AS k),  -- (keys up to 64 bytes)
       pads AS (SELECT decode(string_agg(lpad(to_hex(get_byte(k, i) # 54), 2, '0'), '' ORDER BY i), 'hex') AS ipad,
                       decode(string_agg(lpad(to_hex(get_byte(k, i) # 92), 2, '0'), '' ORDER BY i), 'hex') AS opad
                  FROM k, generate_series(0, 63) i)
  SELECT sha256(opad || sha256(ipad || msg)) FROM pads
$$;
-- The origin a tag binds its message to: the system identifier, the database's oid and the
-- emitting transaction's 32-bit xid (what pgoutput's Begin carries), big-endian.
CREATE FUNCTION pg_temp.origin(xid xid) RETURNS bytea LANGUAGE sql AS $$
  SELECT int8send((SELECT system_identifier FROM pg_control_system()))
      || substring(int8send((SELECT oid FROM pg_database WHERE datname = current_database())::bigint) FROM 5)
      || substring(int8send(xid::text::bigint) FROM 5)
$$;
SELECT is(substring(pg_temp.hmac_sha256('\x000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f',
                                        '\x112233445566778800004000000004d2'
                                        '011111111111111111111111111111111101020304050607080001'
                                        '74ffffffffffff000000027b7d') FOR 16),
          '\xdab07439b1b0f663b6c42b109bcf4731'::bytea,
          'the SQL HMAC gives the pinned tag of tests/unit/core/wal_message_test.cpp (PinnedTagVector)');
SELECT is((SELECT substring(content FROM octet_length(content) - 15) FROM wal_messages),
          (SELECT substring(pg_temp.hmac_sha256(once.wal_secret(),
                                                pg_temp.origin(xid) || substring(content FOR octet_length(content) - 16))
                            FOR 16) FROM wal_messages),
          'the tag is the first 16 bytes of HMAC-SHA256(once.wal_secret(), origin || every byte before it)');
SELECT ok((SELECT bool_and(substring(content FROM octet_length(content) - 15)
                           = substring(pg_temp.hmac_sha256(once.wal_secret(),
                                                           pg_temp.origin(xid) || substring(content FOR octet_length(content) - 16)) FOR 16))
             FROM wal_all), '... also for the session''s second message (the re-used HMAC context)');
SELECT is(octet_length(once.wal_secret()), 32, 'the key is 32 bytes');
SELECT is((SELECT count(*) FROM once.wal_secret), 1::bigint, 'once.wal_secret holds one key');
SELECT throws_ok($$INSERT INTO once.wal_secret (secret) VALUES (decode(repeat('00', 32), 'hex'))$$, '23505', NULL,
                 '... and cannot hold a second');
SELECT bag_eq($$SELECT topic FROM once.outbox$$,
              ARRAY['wal.keyed', 'wal.delayed', 'wal.many_keyed', 'wal.many_keyed', 'table.after_reset'],
              'keyed and delayed messages, a send_many with a key, and sends after RESET are outbox rows');
SELECT ok((SELECT id = :'keyed_id' FROM once.outbox WHERE topic = 'wal.keyed'), '... with the ids once.send returned');

SELECT throws_ok($q$DO $d$BEGIN
                     SET LOCAL once.transport = 'wal';
                     SET LOCAL transaction_read_only = on;
                     PERFORM once.send('wal.read_only', '{}');
                   END$d$$q$, '25006', NULL,
                 'in a read-only transaction a wal send fails as the table''s insert does');
-- A message longer than the WAL transport carries (32 MiB encoded: the relay skips anything
-- longer unread) is refused, even under a once.max_payload_bytes that admits it; the same
-- message goes to the table under the table transport.
SELECT throws_ok($q$DO $d$BEGIN
                     SET LOCAL once.transport = 'wal';
                     SET LOCAL once.max_payload_bytes = '64MB';
                     PERFORM once.send('wal.huge', jsonb_build_object('s', repeat('x', 33 * 1024 * 1024)));
                   END$d$$q$, 'ON202', 'message too large for the WAL transport',
                 'a wal send longer than 32 MiB encoded is refused with ON202');
SELECT lives_ok($q$DO $d$BEGIN
                     SET LOCAL once.max_payload_bytes = '64MB';
                     PERFORM once.send('table.huge', jsonb_build_object('s', repeat('x', 33 * 1024 * 1024)));
                   END$d$$q$, '... and accepted by the table transport');
SELECT is(current_setting('once.transport'), 'table', 'the default transport is the table');
SELECT throws_ok($$SET once.transport = 'kafka'$$, '22023', NULL, 'an unknown transport is refused');
CREATE ROLE wal_producer LOGIN;
GRANT once_producer TO wal_producer;
SET ROLE wal_producer;
SELECT throws_ok($$SET once.transport = 'wal'$$, '42501', NULL, 'only a superuser sets the transport');
SELECT throws_ok($$SELECT set_config('once.transport', 'wal', true)$$, '42501', NULL, '... also with set_config');
SELECT throws_ok($$SELECT once.wal_secret()$$, '42501', NULL, 'a producer cannot read the key through once.wal_secret()');
SELECT throws_ok($$SELECT secret FROM once.wal_secret$$, '42501', NULL, '... nor from its table');
RESET ROLE;
CREATE ROLE wal_relay LOGIN;
GRANT once_relay TO wal_relay;
SELECT encode(secret, 'hex') AS wal_key FROM once.wal_secret \gset
SET ROLE wal_relay;
SELECT is(encode(once.wal_secret(), 'hex'), :'wal_key', 'once_relay reads the key through once.wal_secret()');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;

SELECT true AS slot_dropped FROM pg_drop_replication_slot('once_wal_transport') \gset
