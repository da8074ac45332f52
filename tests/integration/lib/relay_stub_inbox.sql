-- Stand-in for pg_once's once.deliver (see relay_stub_outbox.sql): records (source, id) once
-- and appends the message to relay_received, the table the tests count.
CREATE SCHEMA IF NOT EXISTS once;
CREATE TABLE IF NOT EXISTS public.stub_inbox (source text, id uuid, PRIMARY KEY (source, id));
CREATE OR REPLACE FUNCTION once.deliver(source text, message_id uuid, topic text, payload jsonb, headers jsonb DEFAULT NULL)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.stub_inbox VALUES (source, message_id) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN RETURN 'duplicate'; END IF;
  INSERT INTO public.relay_received (id, topic, key, payload) VALUES (message_id, topic, headers->>'key', payload);
  RETURN 'processed';
END $$;
