-- Code pg_once runs on another role's behalf -- inbox handlers (once.deliver) and saga local
-- steps (once.saga_tick) -- leaves no trace in the caller's session: settings, search_path,
-- temporary objects, prepared statements, LISTEN channels and cursors are what they were
-- before the call. Before, a producer's handler could set the consumer's session search_path
-- so that the consumer's next SELECT now() ran the producer's h_evil.now(), and a producer's
-- saga step could set statement_timeout = 1ms and default_transaction_read_only in the relay's
-- session, failing every later saga_tick and purge.
--
-- No BEGIN ... ROLLBACK around the file: LISTEN and holdable cursors only show after a commit,
-- and default_transaction_read_only only in the next transaction. The roles (cluster-wide)
-- are dropped at the end.
SELECT plan(31);

CREATE ROLE iso_consumer LOGIN IN ROLE once_consumer;  -- calls deliver
CREATE ROLE iso_relay LOGIN IN ROLE once_relay;        -- calls saga_tick and purge
CREATE ROLE iso_producer IN ROLE once_producer;        -- owns the handlers and step functions
CREATE ROLE iso_admin IN ROLE once_admin;              -- subscribes and defines
GRANT CREATE ON SCHEMA public TO iso_producer;
CREATE SCHEMA h_evil AUTHORIZATION iso_producer;
GRANT USAGE ON SCHEMA h_evil TO PUBLIC;
CREATE TABLE public.iso_now_calls (called_by text);
GRANT INSERT ON public.iso_now_calls TO PUBLIC;
CREATE TABLE public.iso_seen (what text, value text);
GRANT INSERT ON public.iso_seen TO PUBLIC;

SET ROLE iso_producer;
-- Runs instead of pg_catalog.now() for whoever has h_evil first on its search_path.
CREATE FUNCTION h_evil.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.iso_now_calls VALUES (current_user);
    RETURN pg_catalog.now();
END $$;
CREATE FUNCTION public.iso_path(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT pg_catalog.set_config('search_path', 'h_evil, pg_catalog, public', false)
$$;
CREATE FUNCTION public.iso_settings(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.set_config('statement_timeout', '1ms', false);
    SET default_transaction_read_only = on;
    PERFORM pg_catalog.set_config('iso.tenant', 'evil', false);
    PERFORM pg_catalog.set_config('iso.never_set', 'evil', false);
END $$;
CREATE FUNCTION public.iso_temp_table(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    CREATE TEMP TABLE evil_temp (x int);
$$;
CREATE FUNCTION public.iso_temp_function(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    CREATE FUNCTION pg_temp.evil_fn() RETURNS int LANGUAGE sql AS 'SELECT 1';
$$;
CREATE FUNCTION public.iso_prepare(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    PREPARE evil_stmt AS SELECT 1;
$$;
CREATE FUNCTION public.iso_deallocate(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    DEALLOCATE caller_stmt;
$$;
CREATE FUNCTION public.iso_listen(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    LISTEN evil_channel;
$$;
CREATE FUNCTION public.iso_hold_cursor(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    DECLARE evil_cursor CURSOR WITH HOLD FOR SELECT 1;
$$;
-- A legitimate handler: SET LOCAL and set_config(..., true) hold while it runs.
CREATE FUNCTION public.iso_set_local(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL work_mem = '7MB';
    PERFORM pg_catalog.set_config('iso.tenant', 'handler', true);
    INSERT INTO public.iso_seen VALUES ('set local', current_setting('work_mem') || ' ' || current_setting('iso.tenant'));
    INSERT INTO public.iso_seen VALUES ('search_path', current_setting('search_path'));
    INSERT INTO public.iso_seen SELECT 'items', count(*)::text FROM iso_items;
END $$;
CREATE TABLE public.iso_items (x int);
INSERT INTO public.iso_items VALUES (1), (2);
-- A saga step that sets what would break the relay's later ticks and purges.
CREATE FUNCTION public.iso_step(saga_id text, data jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.set_config('statement_timeout', '1ms', false);
    PERFORM pg_catalog.set_config('default_transaction_read_only', 'on', false);
    PERFORM pg_catalog.set_config('search_path', 'h_evil, pg_catalog, public', false);
    RETURN '{}';
END $$;
CREATE FUNCTION public.iso_step_listen(saga_id text, data jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    LISTEN evil_channel;
    RETURN '{}';
END $$;
RESET ROLE;

SET ROLE iso_admin;
SELECT once.subscribe('iso.path', 'public.iso_path(once.inbound)');
SELECT once.subscribe('iso.settings', 'public.iso_settings(once.inbound)');
SELECT once.subscribe('iso.temp_table', 'public.iso_temp_table(once.inbound)');
SELECT once.subscribe('iso.temp_function', 'public.iso_temp_function(once.inbound)');
SELECT once.subscribe('iso.prepare', 'public.iso_prepare(once.inbound)');
SELECT once.subscribe('iso.deallocate', 'public.iso_deallocate(once.inbound)');
SELECT once.subscribe('iso.listen', 'public.iso_listen(once.inbound)');
SELECT once.subscribe('iso.hold_cursor', 'public.iso_hold_cursor(once.inbound)');
SELECT once.subscribe('iso.set_local', 'public.iso_set_local(once.inbound)');
SELECT once.saga_define('iso_saga', '{"steps": [{"name": "s", "action": {"function": "public.iso_step"}}]}');
SELECT once.saga_define('iso_listen', '{"steps": [{"name": "s", "action": {"function": "public.iso_step_listen"}}]}');
RESET ROLE;

-- The caller's session: its own settings, temporary table, prepared statement, channel, cursor.
SET statement_timeout = '5min';
SET iso.tenant = 'mine';
CREATE TEMP TABLE iso_items (x int);   -- would shadow public.iso_items under pg_temp first
PREPARE caller_stmt AS SELECT 1;
LISTEN caller_channel;
DECLARE caller_cursor CURSOR WITH HOLD FOR SELECT 1;

CREATE FUNCTION pg_temp.session_state() RETURNS text LANGUAGE sql AS $$
    SELECT pg_catalog.concat_ws(' | ',
        'search_path=' || pg_catalog.current_setting('search_path'),
        'statement_timeout=' || pg_catalog.current_setting('statement_timeout'),
        'read_only=' || pg_catalog.current_setting('default_transaction_read_only'),
        'tenant=' || pg_catalog.current_setting('iso.tenant', true),
        'temp=' || (SELECT pg_catalog.string_agg(name, ',' ORDER BY name) FROM (
                       SELECT c.relname::text AS name FROM pg_catalog.pg_class c WHERE c.relnamespace = pg_catalog.pg_my_temp_schema()
                       UNION ALL
                       SELECT p.proname::text FROM pg_catalog.pg_proc p WHERE p.pronamespace = pg_catalog.pg_my_temp_schema()) o),
        'prepared=' || (SELECT pg_catalog.string_agg(name, ',' ORDER BY name) FROM pg_catalog.pg_prepared_statements),
        'listening=' || (SELECT pg_catalog.string_agg(c, ',' ORDER BY c) FROM pg_catalog.pg_listening_channels() c),
        'cursors=' || (SELECT pg_catalog.string_agg(name, ',' ORDER BY name) FROM pg_catalog.pg_cursors))
$$;
-- deliver and saga_tick as the consumer and the relay, in the caller's session.
CREATE FUNCTION pg_temp.deliver(topic text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL ROLE iso_consumer;
    RETURN once.deliver('iso', topic || '-1', topic, '{}');
END $$;
CREATE FUNCTION pg_temp.tick(saga text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    UPDATE once.saga_instances SET deadline = now() - interval '1 second' WHERE saga_id = saga;
    SET LOCAL ROLE iso_relay;
    RETURN once.saga_tick();
END $$;
CREATE TABLE pg_temp.state_before (state text);
CREATE FUNCTION pg_temp.unchanged() RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN pg_temp.session_state() = s.state THEN 'unchanged'
                ELSE 'before: ' || s.state || E'\nafter:  ' || pg_temp.session_state() END
      FROM pg_temp.state_before s
$$;
INSERT INTO pg_temp.state_before SELECT pg_temp.session_state();

-- The consumer's search_path attack, as written in the finding.
SELECT is(pg_temp.deliver('iso.path'), 'processed', 'a handler that sets search_path at session level runs');
SELECT is(pg_temp.unchanged(), 'unchanged', '... and the caller''s session is as before');
SET ROLE iso_consumer;
SELECT now() IS NOT NULL AS now_runs;
RESET ROLE;
SELECT is((SELECT count(*)::int FROM public.iso_now_calls), 0,
    'the consumer''s next SELECT now() runs pg_catalog.now(), not the producer''s h_evil.now()');

SELECT is(pg_temp.deliver('iso.settings'), 'processed', 'a handler that sets session settings (set_config, SET) runs');
SELECT is(pg_temp.unchanged(), 'unchanged',
    '... and statement_timeout, default_transaction_read_only and a custom setting are the caller''s again');
SELECT is(pg_catalog.current_setting('iso.never_set', true), '',
    'a custom setting the caller never set reads as empty, not NULL, afterwards (PostgreSQL keeps its placeholder)');

-- What would outlive the call is refused; the handler fails and nothing is recorded.
SELECT throws_ok($$SELECT pg_temp.deliver('iso.temp_table')$$, '42501', NULL, 'a handler cannot create a temporary table');
SELECT throws_ok($$SELECT pg_temp.deliver('iso.temp_function')$$, '42501',
    'cannot create temporary objects within code pg_once runs on another role''s behalf',
    'a handler cannot create a temporary function either');
SELECT throws_ok($$SELECT pg_temp.deliver('iso.prepare')$$, '42501', NULL, 'a handler cannot PREPARE');
SELECT throws_ok($$SELECT pg_temp.deliver('iso.deallocate')$$, '42501', NULL, 'a handler cannot DEALLOCATE the caller''s statement');
SELECT throws_ok($$SELECT pg_temp.deliver('iso.listen')$$, '42501', NULL, 'a handler cannot LISTEN');
SELECT throws_ok($$SELECT pg_temp.deliver('iso.hold_cursor')$$, '42501', NULL, 'a handler cannot declare a cursor WITH HOLD');
SELECT is(pg_temp.unchanged(), 'unchanged', 'after the refused handlers the caller''s session is as before');
SELECT is((SELECT count(*)::int FROM once.inbox WHERE source = 'iso' AND message_id = 'iso.listen-1'), 0,
    'a refused handler is a failed handler: its message is not recorded');
SET ROLE iso_consumer;
SELECT is(once.inbox_failed('iso', 'iso.listen-1', 'cannot execute LISTEN'), 1, 'the consumer counts the failed attempt');
RESET ROLE;
SELECT throws_ok($$SELECT pg_temp.deliver('iso.listen')$$, '42501', NULL, 'a redelivery runs the handler again (and fails again)');

-- A legitimate handler: SET LOCAL works inside, the pinned search_path applies.
SELECT is(pg_temp.deliver('iso.set_local'), 'processed', 'a handler using SET LOCAL runs');
SELECT is((SELECT value FROM public.iso_seen WHERE what = 'set local'), '7MB handler', '... and sees its own local settings');
SELECT is((SELECT value FROM public.iso_seen WHERE what = 'search_path'), '"$user", public, pg_temp',
    'a handler runs under the pinned search_path, not the caller''s');
SELECT is((SELECT value FROM public.iso_seen WHERE what = 'items'), '2',
    'the caller''s temporary table does not shadow the owner''s table of the same name');
SELECT is(pg_temp.unchanged(), 'unchanged', '... and its local settings end with it');

-- The relay's session attack, as written in the finding.
SET ROLE iso_producer;
SELECT once.saga_start('iso_saga', 'iso-1');
RESET ROLE;
SELECT is(pg_temp.tick('iso-1'), 1, 'saga_tick runs a step that sets statement_timeout, read-only and search_path');
SELECT is((SELECT status FROM once.sagas WHERE saga_id = 'iso-1'), 'completed', '... the step succeeded');
SELECT is(pg_temp.unchanged(), 'unchanged', '... and the relay''s session is as before');
SELECT is(pg_catalog.current_setting('transaction_read_only'), 'off', 'the next transaction is not read-only');
SET ROLE iso_relay;
SELECT lives_ok('SELECT once.saga_tick()', 'the relay''s next saga_tick works');
SELECT lives_ok('SELECT once.purge()', 'the relay''s purge works');
SET ROLE iso_producer;
SELECT once.saga_start('iso_listen', 'iso-2');
RESET ROLE;
SELECT is(pg_temp.tick('iso-2'), 1, 'saga_tick runs a step that tries to LISTEN');
SELECT matches((SELECT last_error FROM once.sagas WHERE saga_id = 'iso-2'), 'cannot execute LISTEN within security-restricted operation',
    '... the step fails with PostgreSQL''s refusal, as a step that raises does');
SELECT is((SELECT status FROM once.sagas WHERE saga_id = 'iso-2'), 'compensated', '... so the saga compensates (nothing to undo)');
SELECT is(pg_temp.unchanged(), 'unchanged', '... and the relay''s session is as before');

SELECT * FROM finish();

SET client_min_messages = error;
CLOSE caller_cursor;
UNLISTEN caller_channel;
DROP SCHEMA h_evil CASCADE;
DROP OWNED BY iso_consumer, iso_relay, iso_producer, iso_admin CASCADE;
DROP ROLE iso_consumer, iso_relay, iso_producer, iso_admin;
