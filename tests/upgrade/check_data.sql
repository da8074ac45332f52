-- After ALTER EXTENSION pg_once UPDATE: the data written by the old version still works.
-- Each line prints "ok - what" or "not ok - what"; run.sh counts them.
\pset format unaligned
\pset tuples_only on
SELECT CASE WHEN r.replayed AND r.response = '{"charged": 5}' THEN 'ok' ELSE 'not ok' END
       || ' - a once.run result stored by the old version replays'
  FROM once.run('payments', 'done-run', '{"amount": 5}', 'SELECT ''{}''::jsonb') r;
SELECT CASE WHEN a.state = 'replay' AND a.response = '{"charge": "ch_7"}' THEN 'ok' ELSE 'not ok' END
       || ' - a completed key replays its response'
  FROM once.key_acquire('payments', 'done-key', '{"amount": 7}') a;
SELECT CASE WHEN a.state = 'busy' THEN 'ok' ELSE 'not ok' END || ' - a key in progress is still busy'
  FROM once.key_acquire('payments', 'open-key', '{"amount": 9}') a;
SELECT once.key_complete('payments', 'open-key', '{"charge": "ch_9"}', 200, 1);
SELECT CASE WHEN a.state = 'replay' AND a.response = '{"charge": "ch_9"}' THEN 'ok' ELSE 'not ok' END
       || ' - the old holder completes its key (attempt 1) after the update'
  FROM once.key_acquire('payments', 'open-key', '{"amount": 9}') a;
SELECT CASE WHEN owner = (SELECT oid FROM pg_roles WHERE rolname = current_user) THEN 'ok' ELSE 'not ok' END
       || ' - the key completed after the update belongs to the role that completed it (0.3)'
  FROM once.keys WHERE scope = 'payments' AND key = 'open-key';
SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE 'not ok' END
       || ' - no key without an owner outlives the update by more than 24 hours (0.3)'
  FROM once.keys WHERE owner = 0 AND expires_at > now() + interval '24 hours 1 minute';
SELECT CASE WHEN count(*) = 1 THEN 'ok' ELSE 'not ok' END || ' - the key stored for 20 days is still there'
  FROM once.keys WHERE scope = 'payments' AND key = 'long-ttl';

SELECT once.send('order.shipped', '{"n": 8}', key => 'order-1') IS NOT NULL AS sent \gset
SELECT CASE WHEN pos IS NULL THEN 'ok' ELSE 'not ok' END
       || ' - a message sent after the update behind a ready old message of its key does not wait (0.2)'
  FROM once.outbox WHERE topic = 'order.shipped';
SELECT CASE WHEN once.ack('relay-a', array_agg(id)) = 1 THEN 'ok' ELSE 'not ok' END
       || ' - the message in flight since before the update acks'
  FROM once.outbox WHERE topic = 'order.created';
SELECT CASE WHEN array_agg(topic ORDER BY topic) = '{order.paid,stock.changed}' THEN 'ok' ELSE 'not ok' END
       || ' - the next message of the key and the ready message are claimed; the delayed one waits'
  FROM once.claim('relay-b', 10, '1 minute', ARRAY['order.paid', 'stock.changed', 'report.due']);
SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE 'not ok' END
       || ' - the new message of the key still waits: an old one is in flight'
  FROM once.claim('relay-b', 10, '1 minute', ARRAY['order.shipped']);
SELECT CASE WHEN once.ack('relay-b', array_agg(id)) = 1 THEN 'ok' ELSE 'not ok' END
       || ' - the old next message of the key acks'
  FROM once.outbox WHERE topic = 'order.paid';
SELECT CASE WHEN array_agg(payload->>'n') = '{8}' THEN 'ok' ELSE 'not ok' END
       || ' - then the new message is claimed'
  FROM once.claim('relay-b', 10, '1 minute', ARRAY['order.shipped']);
SELECT CASE WHEN once.redrive(array_agg(id)) = 1 THEN 'ok' ELSE 'not ok' END
       || ' - the dead letter redrives'
  FROM once.dead_letters;
SELECT CASE WHEN count(*) = 1 THEN 'ok' ELSE 'not ok' END || ' - the redriven message is claimed'
  FROM once.claim('relay-b', 10, '1 minute', ARRAY['mail.send']);

BEGIN;
CREATE TEMP TABLE locked ON COMMIT DROP AS SELECT * FROM once.claim_locked('relay-c', 10, ARRAY['audit.>']);
SELECT CASE WHEN array_agg(payload->>'n' ORDER BY payload->>'n') = '{5,7}'
             AND once.ack('relay-c', array_agg(id)) = 2 THEN 'ok' ELSE 'not ok' END
       || ' - claim_locked (0.2) takes old messages through the new topic index, one per key'
  FROM locked;
COMMIT;
SELECT CASE WHEN array_agg(payload->>'n') = '{6}' THEN 'ok' ELSE 'not ok' END
       || ' - after the commit the key''s next message is claimed'
  FROM once.claim('relay-c', 10, '1 minute', ARRAY['audit.login']);

SELECT CASE WHEN NOT once.receive('shop', 'm-1', 'order.created') THEN 'ok' ELSE 'not ok' END
       || ' - a message received before the update is a duplicate';
SELECT CASE WHEN once.deliver('shop', 'm-2', 'order.created', '{"n": 1}') = 'duplicate' THEN 'ok' ELSE 'not ok' END
       || ' - a message delivered before the update is a duplicate';
SELECT once.deliver('shop', 'm-4', 'order.created', '{"n": 4}') AS delivered \gset
SELECT CASE WHEN :'delivered' = 'processed' AND (SELECT count(*) FROM app.handled) = 2 THEN 'ok' ELSE 'not ok' END
       || ' - the old subscription still routes new messages to its handler';

UPDATE once.saga_instances SET deadline = now() - interval '1 second' WHERE saga_id = 'order-77';
SELECT once.saga_tick() AS ticked \gset
SELECT CASE WHEN :ticked = 1 AND attempts = 2 THEN 'ok'
            ELSE format('not ok - ticked %s, attempts %s', :ticked, attempts) END
       || ' - saga_tick (C++ since 0.2) resends the timed-out step of a saga started before the update'
  FROM once.sagas WHERE saga_id = 'order-77';
SELECT once.saga_reply('order-77', 'reserve', 'succeeded', '{"reservation": "r1"}', 'reply-1');
SELECT once.saga_reply('order-77', 'pay', 'succeeded', '{"charge": "c1"}', 'reply-2');
SELECT CASE WHEN status = 'completed' THEN 'ok' ELSE 'not ok - status ' || status END
       || ' - the saga started before the update finishes'
  FROM once.sagas WHERE saga_id = 'order-77';
SELECT CASE WHEN status = 'compensating' AND failure_cause LIKE '%card declined%' THEN 'ok'
            ELSE format('not ok - status %s, failure_cause %s', status, failure_cause) END
       || ' - a saga compensating since before the update has its failure cause'
  FROM once.sagas WHERE saga_id = 'order-cause-1';
