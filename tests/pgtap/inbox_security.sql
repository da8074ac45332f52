-- Inbox privileges: once_consumer receives and delivers, only once_admin subscribes. A handler
-- runs as the role the admin chose (run_as) or as its owner: never with the rights of the role
-- that called deliver, never as the extension owner (0.2 ran it as the
-- caller, so the owner of a handler -- a producer -- could rewrite it and borrow the consumer's
-- rights).
BEGIN;
SELECT plan(29);

CREATE ROLE inbox_app LOGIN;        -- a consumer: calls deliver
CREATE ROLE inbox_ops LOGIN;        -- an administrator
CREATE ROLE inbox_stranger LOGIN;   -- no pg_once role
CREATE ROLE inbox_code;             -- owns the handlers (the service's schema owner)
CREATE ROLE inbox_writer;           -- a role the handlers may run as
CREATE ROLE mallory LOGIN;          -- a producer that owns a handler of its own
GRANT once_consumer TO inbox_app;
GRANT once_admin TO inbox_ops;
GRANT once_producer TO mallory;
GRANT inbox_writer TO inbox_code;   -- inbox_code has inbox_writer's rights
GRANT once_consumer TO inbox_code, inbox_writer;  -- (USAGE on schema once, for the type once.inbound)

CREATE TABLE effects (message_id text, run_as text);
GRANT SELECT, INSERT ON effects TO inbox_app, inbox_code, inbox_writer, mallory;
CREATE TABLE secrets (v text);      -- only the superuser and inbox_app may read it
INSERT INTO secrets VALUES ('s3cret');
GRANT SELECT ON secrets TO inbox_app;
GRANT CREATE ON SCHEMA public TO inbox_code, mallory;

SET ROLE inbox_code;
CREATE FUNCTION record_effect(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    INSERT INTO public.effects VALUES (msg.message_id, current_user)
$$;
CREATE FUNCTION read_secret(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    INSERT INTO public.effects SELECT msg.message_id, v FROM public.secrets
$$;
CREATE FUNCTION peek_inbox(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT count(*) FROM once.inbox
$$;
CREATE FUNCTION private_handler(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    INSERT INTO public.effects VALUES (msg.message_id, 'private')
$$;
REVOKE EXECUTE ON FUNCTION private_handler(once.inbound) FROM PUBLIC;
CREATE FUNCTION as_writer(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    INSERT INTO public.effects VALUES (msg.message_id, current_user)
$$;
CREATE FUNCTION set_role_back(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    SET ROLE inbox_app;
END $$;
RESET ROLE;
SET ROLE mallory;
CREATE FUNCTION mallory_handler(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    INSERT INTO public.effects VALUES (msg.message_id, current_user)
$$;
RESET ROLE;

SET ROLE inbox_ops;
SELECT is(once.subscribe('order.*', 'record_effect(once.inbound)'), true, 'once_admin may subscribe');
SELECT once.subscribe('secret.*', 'read_secret(once.inbound)');
SELECT once.subscribe('peek.*', 'peek_inbox(once.inbound)');
SELECT once.subscribe('private.*', 'private_handler(once.inbound)', 'inbox_writer');
SELECT once.subscribe('role.*', 'set_role_back(once.inbound)');
SELECT is(once.subscribe('writer.*', 'as_writer(once.inbound)', 'inbox_writer'), true,
          'a handler may run as a role its owner has the rights of');
SELECT throws_ok($$SELECT once.subscribe('mal.*', 'mallory_handler(once.inbound)', 'inbox_app')$$, 'ON306',
                 'the inbox handler may not run as role "inbox_app"',
                 'a handler whose owner lacks the run_as role''s rights is refused (ON306)');
SELECT is((SELECT count(*)::int FROM once.inbox_subscriptions WHERE topic_pattern = 'mal.*'), 0,
          '... and no subscription was stored');
SELECT once.subscribe('mal.*', 'mallory_handler(once.inbound)');
RESET ROLE;

SET ROLE inbox_app;
SELECT is(once.deliver('shop', 'm1', 'order.created', '{}'), 'processed', 'once_consumer may deliver');
SELECT is((SELECT run_as FROM effects WHERE message_id = 'm1'), 'inbox_code',
          'the handler ran as its owner, not as the role that called deliver');
SELECT is(once.deliver('shop', 'w1', 'writer.x', '{}'), 'processed', 'deliver to a handler with a run_as role');
SELECT is((SELECT run_as FROM effects WHERE message_id = 'w1'), 'inbox_writer', '... it ran as that role');
SELECT is(once.deliver('shop', 'mal1', 'mal.x', '{}'), 'processed', 'deliver to a producer''s handler');
SELECT is((SELECT run_as FROM effects WHERE message_id = 'mal1'), 'mallory', '... it ran as the producer');
SELECT is(current_user::text, 'inbox_app', 'deliver gives the caller its own role back');
SELECT is(once.receive('shop', 'r1'), true, 'once_consumer may receive');
SELECT is(once.inbox_failed('shop', 'f1', 'e'), 1, 'once_consumer may record failures');
SELECT throws_ok($$SELECT once.deliver('shop', 'm2', 'secret.read', '{}')$$, '42501', NULL,
                 'a handler cannot use the rights of the role that called deliver');
SELECT throws_ok($$SELECT once.deliver('shop', 'm3', 'peek.x', '{}')$$, '42501', NULL,
                 'a handler cannot read pg_once''s tables');
SELECT throws_ok($$SELECT once.deliver('shop', 'm4', 'private.x', '{}')$$, '42501', NULL,
                 'deliver checks EXECUTE on the handler for the role it runs as');
SELECT throws_ok($$SELECT once.deliver('shop', 'm5', 'role.x', '{}')$$, '42501', NULL,
                 'a handler cannot SET ROLE back to the caller');
SELECT throws_ok($$SELECT once.subscribe('evil.*', 'record_effect(once.inbound)')$$, '42501', NULL,
                 'once_consumer may not subscribe');
SELECT throws_ok($$SELECT once.unsubscribe('order.*')$$, '42501', NULL, 'once_consumer may not unsubscribe');
SELECT throws_ok($$SELECT once.inbox_retry('shop', 'f1')$$, '42501', NULL, 'once_consumer may not retry poison messages');
SELECT throws_ok($$SELECT count(*) FROM once.inbox$$, '42501', NULL, 'once_consumer cannot read the inbox table');
SELECT throws_ok($$INSERT INTO once.inbox (source, message_id) VALUES ('shop', 'forged')$$, '42501', NULL,
                 'once_consumer cannot write the inbox table');
RESET ROLE;

-- The owner changes after the admin chose run_as: the next delivery is refused, not run.
ALTER FUNCTION as_writer(once.inbound) OWNER TO mallory;
SET ROLE inbox_app;
SELECT throws_ok($$SELECT once.deliver('shop', 'w2', 'writer.x', '{}')$$, 'ON306', NULL,
                 'a handler whose new owner lacks the run_as role''s rights does not run (ON306)');
RESET ROLE;

SET ROLE inbox_stranger;
SELECT throws_ok($$SELECT once.receive('shop', 'x')$$, '42501', NULL, 'a role without once_consumer cannot receive');
SELECT throws_ok($$SELECT once.deliver('shop', 'x', 'order.created', '{}')$$, '42501', NULL, 'nor deliver');
RESET ROLE;

SELECT results_eq($$SELECT message_id FROM once.inbox WHERE source = 'shop' ORDER BY 1$$, ARRAY['m1', 'mal1', 'r1', 'w1'],
                  'only the successful deliveries were recorded');

-- a hostile search_path: look-alike tables and a text "=" that lies, searched before pg_catalog
CREATE SCHEMA evil;
CREATE TABLE evil.inbox (source text, message_id text, topic text);
CREATE FUNCTION evil.always_true(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.always_true);
GRANT USAGE ON SCHEMA evil TO PUBLIC;
SET search_path = evil, pg_catalog, public;
-- (pgTAP itself does not survive that search_path: collect the results, assert afterwards)
CREATE TEMP TABLE hostile AS
SELECT once.receive('hostile', 'h1') AS received, once.deliver('hostile', 'h2', 'order.created', '{}') AS delivered;
RESET search_path;
SELECT is((SELECT received FROM hostile), true, 'receive under a hostile search_path');
SELECT is((SELECT delivered FROM hostile), 'processed', 'deliver under a hostile search_path');
SELECT results_eq($$SELECT message_id FROM once.inbox WHERE source = 'hostile' ORDER BY 1$$, ARRAY['h1', 'h2'],
                  'pg_once used its own tables and operators');

SELECT * FROM finish();
ROLLBACK;
