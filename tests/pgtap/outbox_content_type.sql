-- A message's content type (once.send / send_many's content_type): NULL by default
-- (application/json), else a media type stored in once.outbox.content_type and returned by
-- once.claim and once.claim_locked, kept when a message is put back or written back from the
-- WAL stream, and carried by the WAL transport as format 3's optional field 1. A content type
-- that is no media type, too long, or a non-JSON one over a payload that is not a JSON string
-- is refused with ON219 and writes nothing. (The sinks' headers: tests/integration/relay_http.sh,
-- relay_sinks.sh, relay_wal.sh.)
-- The WAL part: as tests/pgtap/outbox_wal_transport.sql, the slot is created and the sends
-- commit before the test's transaction, and the slot is dropped at the end.
CREATE PUBLICATION once_ct_pgtap;
SELECT pg_create_logical_replication_slot('once_content_type', 'pgoutput') IS NOT NULL AS slot_created \gset
SET once.transport = 'wal';
SELECT once.send('ct.wal', '"<a/>"', content_type => 'application/xml') AS wal_xml_id \gset
SELECT once.send('ct.wal', '{"n": 1}') AS wal_plain_id \gset
RESET once.transport;

BEGIN;
SELECT plan(26);

-- pgoutput's Message: 'M', flags, LSN (8 bytes), prefix and NUL, content length (4), content.
CREATE TEMP TABLE wal_all AS
SELECT substring(data FROM 23) AS content
  FROM pg_logical_slot_peek_binary_changes('once_content_type', NULL, NULL, 'proto_version', '1',
                                           'publication_names', 'once_ct_pgtap', 'messages', 'true')
 WHERE get_byte(data, 0) = ascii('M') AND substring(data FROM 11 FOR 8) = '\x70675f6f6e636500'::bytea;
SELECT content AS xml_content FROM wal_all WHERE substring(content FROM 2 FOR 16) = uuid_send(:'wal_xml_id') \gset
SELECT content AS plain_content FROM wal_all WHERE substring(content FROM 2 FOR 16) = uuid_send(:'wal_plain_id') \gset
SELECT is(get_byte(:'xml_content'::bytea, 0), 3, 'WAL transport: a message with a content type is of format 3');
-- before the 16-byte tag: one optional field, id 1, length 15, the media type
SELECT is(substring(:'xml_content'::bytea FROM length(:'xml_content'::bytea) - 16 - 21 + 1 FOR 21),
          '\x01010000000f'::bytea || convert_to('application/xml', 'UTF8'),
          '... carrying it as optional field 1 after the payload');
SELECT is(get_byte(:'plain_content'::bytea, 0), 1, '... one without a content type keeps format 1');

-- The table transport.
SELECT once.send('ct.table', '"<order id=\"1\"/>"', content_type => 'application/xml') AS xml_id \gset
SELECT once.send('ct.table', '{"n": 2}') AS plain_id \gset
SELECT once.send('ct.table', '{"n": 3}', content_type => 'application/vnd.example+json; charset=utf-8') AS json_id \gset
SELECT is((SELECT content_type FROM once.outbox WHERE id = :'xml_id'), 'application/xml',
          'once.send stores its content_type');
SELECT is((SELECT content_type FROM once.outbox WHERE id = :'plain_id'), NULL, '... NULL by default (application/json)');
SELECT is((SELECT content_type FROM once.outbox WHERE id = :'json_id'), 'application/vnd.example+json; charset=utf-8',
          'a +json type with parameters labels a JSON object');
CREATE TEMP TABLE many AS SELECT once.send_many('ct.many', ARRAY['"a"', '"b"']::jsonb[], content_type => 'text/plain') AS id;
INSERT INTO many SELECT once.send_many('ct.many_keyed', ARRAY['"c"']::jsonb[], ARRAY['k1'], 'text/csv');
SELECT is((SELECT array_agg(content_type ORDER BY id) FROM once.outbox WHERE topic = 'ct.many' AND id IN (SELECT id FROM many)),
          ARRAY['text/plain', 'text/plain'], 'once.send_many labels each of its messages');
SELECT is((SELECT array_agg(content_type) FROM once.outbox WHERE topic = 'ct.many_keyed' AND id IN (SELECT id FROM many)),
          ARRAY['text/csv'], '... keyed too');

-- Claims return it.
SELECT is((SELECT array_agg(coalesce(content_type, '-') ORDER BY id) FROM once.claim('r1', 10, topics => '{ct.table}')),
          ARRAY['application/xml', '-', 'application/vnd.example+json; charset=utf-8'],
          'once.claim returns each message''s content_type');
SELECT once.send('ct.locked', '"x,y"', content_type => 'text/csv') AS locked_id \gset
SELECT is((SELECT content_type FROM once.claim_locked('r2', 10, '{ct.locked}')), 'text/csv',
          'once.claim_locked returns it');
SELECT is(once.nack('r2', :'locked_id', 'HTTP 503'), 'retry', '... a lock-held message given back');
SELECT is((SELECT content_type FROM once.outbox WHERE id = :'locked_id'), 'text/csv', '... keeps its content_type');

-- An explicit message_id: the same message again is a no-op, another content type is another message.
SELECT once.send('ct.id', '"x"', message_id => 'c0000000-0000-4000-8000-000000000001', content_type => 'text/plain') AS same_id \gset
SELECT is(once.send('ct.id', '"x"', message_id => 'c0000000-0000-4000-8000-000000000001', content_type => 'text/plain'),
          :'same_id'::uuid, 'a repeated explicit message_id with the same content_type is a no-op');
SELECT throws_ok($$SELECT once.send('ct.id', '"x"', message_id => 'c0000000-0000-4000-8000-000000000001',
                                    content_type => 'text/html')$$,
                 'ON212', NULL, '... with another content_type it is a conflict');

-- Bad content types: ON219, nothing written.
SELECT count(*) AS before FROM once.outbox \gset
SELECT throws_ok($$SELECT once.send('ct.bad', '"x"', content_type => 'xml')$$, 'ON219',
                 'invalid content_type: content_type has no ''/'' between type and subtype',
                 'a content type without a subtype is refused');
SELECT throws_ok($$SELECT once.send('ct.bad', '"x"', content_type => '')$$, 'ON219', NULL, '... an empty one');
SELECT throws_ok($$SELECT once.send('ct.bad', '"x"', content_type => E'text/plain\r\nX-Evil: 1')$$, 'ON219', NULL,
                 '... one with control characters (a header injection)');
SELECT throws_ok(format($$SELECT once.send('ct.bad', '"x"', content_type => %L)$$,
                        'text/plain; a=' || repeat('v', 242)), 'ON219', NULL, '... one over 255 bytes');
SELECT lives_ok(format($$SELECT once.send('ct.ok', '"x"', content_type => %L)$$, 'text/plain; a=' || repeat('v', 241)),
                '... 255 bytes are allowed');
SELECT throws_ok($$SELECT once.send('ct.bad', '{"n": 1}', content_type => 'application/xml')$$, 'ON219',
                 'payload must be a JSON string under content_type application/xml',
                 'a non-JSON content type needs a JSON string payload');
SELECT throws_ok($$SELECT once.send_many('ct.bad', ARRAY['"a"', '[1]']::jsonb[], content_type => 'text/plain')$$,
                 'ON219', 'payload 2 must be a JSON string under content_type text/plain', '... in send_many too');
SELECT throws_ok($$SELECT once.send_many('ct.bad', ARRAY['"a"']::jsonb[], content_type => 'text plain')$$,
                 'ON219', NULL, 'send_many checks the content type');
SELECT is((SELECT count(*) FROM once.outbox), :'before'::bigint + 1, 'the refused sends wrote nothing');

-- The WAL transport's write-back keeps it (and checks it as once.send does).
CREATE ROLE ct_relay;
GRANT once_relay TO ct_relay;
SET ROLE ct_relay;
SELECT ok(once.wal_write_back(jsonb_populate_record(NULL::once.wal_write_back_message,
              jsonb_build_object('id', 'c0000000-0000-7000-8000-0000000000aa', 'topic', 'ct.wb', 'payload', '<a/>',
                                 'content_type', 'application/xml', 'created_at', now(), 'attempts', 1,
                                 'error', 'HTTP 503', 'dead', false))),
          'once.wal_write_back takes a record built by name, with a content_type');
SELECT throws_ok($$SELECT once.wal_write_back(jsonb_populate_record(NULL::once.wal_write_back_message,
                     jsonb_build_object('id', gen_random_uuid(), 'topic', 'ct.wb', 'payload', '<a/>',
                                        'content_type', 'application/ xml', 'created_at', now(), 'attempts', 1,
                                        'dead', false)))$$,
                 'ON219', NULL, '... and refuses a bad one');
RESET ROLE;
SELECT is((SELECT content_type || ' ' || payload::text FROM once.outbox WHERE id = 'c0000000-0000-7000-8000-0000000000aa'),
          'application/xml "<a/>"', '... the row written back has it');

SELECT * FROM finish();
ROLLBACK;

SELECT true AS slot_dropped FROM pg_drop_replication_slot('once_content_type') \gset
DROP PUBLICATION once_ct_pgtap;
