-- A minimal stand-in for pg_once's outbox and inbox, loaded by the relay integration tests
-- only when the installed pg_once does not yet provide once.claim / once.deliver (the relay
-- was developed in parallel with them). It follows the SQL contract in DESIGN.md: claim with
-- a lease and SKIP LOCKED, at most the oldest unfinished message per key, ack/nack/extend by
-- relay name, a wake-up NOTIFY on the relay channel.
CREATE SCHEMA IF NOT EXISTS once;
CREATE SCHEMA IF NOT EXISTS once_stub;

DO $$ BEGIN
  IF pg_catalog.to_regtype('once.message') IS NULL THEN
    CREATE TYPE once.message AS (id uuid, topic text, key text, payload jsonb, headers jsonb, attempt int, created_at timestamptz);
  END IF;
END $$;

CREATE TABLE IF NOT EXISTS once_stub.outbox (
    seq bigserial PRIMARY KEY,
    id uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    topic text NOT NULL, key text, payload jsonb NOT NULL, headers jsonb,
    attempt int NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now(),
    available_at timestamptz NOT NULL DEFAULT now(),
    locked_by text, locked_until timestamptz,
    dead boolean NOT NULL DEFAULT false, last_error text);
CREATE INDEX IF NOT EXISTS outbox_key ON once_stub.outbox (key, seq);

CREATE OR REPLACE FUNCTION once.send(topic text, payload jsonb, key text DEFAULT NULL, headers jsonb DEFAULT NULL,
                                     deliver_at timestamptz DEFAULT NULL, message_id uuid DEFAULT NULL)
RETURNS uuid LANGUAGE sql AS $$
  INSERT INTO once_stub.outbox (id, topic, key, payload, headers, available_at)
  VALUES (coalesce(message_id, gen_random_uuid()), topic, key, payload, headers, coalesce(deliver_at, now()))
  RETURNING id $$;

CREATE OR REPLACE FUNCTION once_stub.notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_notify('once_outbox', ''); RETURN NULL; END $$;
DROP TRIGGER IF EXISTS outbox_notify ON once_stub.outbox;
CREATE TRIGGER outbox_notify AFTER INSERT ON once_stub.outbox FOR EACH STATEMENT EXECUTE FUNCTION once_stub.notify();

CREATE OR REPLACE FUNCTION once.claim(relay text, batch int DEFAULT 100, lease interval DEFAULT '30 seconds',
                                      topics text[] DEFAULT NULL)
RETURNS SETOF once.message LANGUAGE sql AS $$
  WITH heads AS (   -- the oldest unfinished message of each key, and every keyless one
      SELECT o.seq FROM once_stub.outbox o
      WHERE NOT o.dead
        AND (o.key IS NULL OR NOT EXISTS (SELECT 1 FROM once_stub.outbox e WHERE e.key = o.key AND e.seq < o.seq))
  ), c AS (
      SELECT o.seq FROM once_stub.outbox o JOIN heads USING (seq)
      WHERE o.available_at <= now() AND (o.locked_until IS NULL OR o.locked_until < now())
        AND (topics IS NULL OR EXISTS (SELECT 1 FROM unnest(topics) p
             WHERE o.topic ~ ('^' || replace(replace(replace(p, '.', '\.'), '*', '[^.]+'), '\.>', '\..+') || '$')))
      ORDER BY o.seq LIMIT batch FOR UPDATE OF o SKIP LOCKED
  )
  UPDATE once_stub.outbox o SET locked_by = relay, locked_until = now() + lease, attempt = o.attempt + 1
  FROM c WHERE o.seq = c.seq
  RETURNING o.id, o.topic, o.key, o.payload, o.headers, o.attempt, o.created_at $$;

CREATE OR REPLACE FUNCTION once.ack(relay text, ids uuid[]) RETURNS int LANGUAGE sql AS $$
  WITH d AS (DELETE FROM once_stub.outbox WHERE id = ANY (ids) AND locked_by = relay AND locked_until >= now() RETURNING 1)
  SELECT count(*)::int FROM d $$;

CREATE OR REPLACE FUNCTION once.nack(relay text, id uuid, error text, retry_after interval DEFAULT NULL)
RETURNS boolean LANGUAGE sql AS $$
  WITH u AS (UPDATE once_stub.outbox o SET locked_by = NULL, locked_until = NULL, last_error = error,
                available_at = now() + coalesce(retry_after, least(interval '2 seconds', interval '50 ms' * power(2, o.attempt))),
                dead = coalesce(error LIKE 'permanent:%', false)
             WHERE o.id = nack.id AND o.locked_by = relay RETURNING 1)
  SELECT count(*) = 1 FROM u $$;

CREATE OR REPLACE FUNCTION once.extend(relay text, ids uuid[], lease interval) RETURNS int LANGUAGE sql AS $$
  WITH u AS (UPDATE once_stub.outbox SET locked_until = now() + lease
             WHERE id = ANY (ids) AND locked_by = relay AND locked_until >= now() RETURNING 1)
  SELECT count(*)::int FROM u $$;
