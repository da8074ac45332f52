-- Inbox privileges: once_consumer receives and delivers, only once_admin subscribes, handlers
-- run with the rights of the role that called deliver (never the extension owner).
BEGIN;
SELECT plan(19);

CREATE ROLE inbox_app LOGIN;        -- a consumer
CREATE ROLE inbox_ops LOGIN;        -- an administrator
CREATE ROLE inbox_stranger LOGIN;   -- no pg_once role
GRANT once_consumer TO inbox_app;
GRANT once_admin TO inbox_ops;

CREATE TABLE effects (message_id text, run_as text);
GRANT SELECT, INSERT ON effects TO inbox_app;
CREATE TABLE secrets (v text);      -- inbox_app may not read it; the owner (superuser) may
INSERT INTO secrets VALUES ('s3cret');
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

SET ROLE inbox_ops;
SELECT is(once.subscribe('order.*', 'record_effect(once.inbound)'), true, 'once_admin may subscribe');
SELECT once.subscribe('secret.*', 'read_secret(once.inbound)');
SELECT once.subscribe('peek.*', 'peek_inbox(once.inbound)');
SELECT once.subscribe('private.*', 'private_handler(once.inbound)');
RESET ROLE;

SET ROLE inbox_app;
SELECT is(once.deliver('shop', 'm1', 'order.created', '{}'), 'processed', 'once_consumer may deliver');
SELECT is((SELECT run_as FROM effects WHERE message_id = 'm1'), 'inbox_app', 'the handler ran as the role that called deliver');
SELECT is(once.receive('shop', 'r1'), true, 'once_consumer may receive');
SELECT is(once.inbox_failed('shop', 'f1', 'e'), 1, 'once_consumer may record failures');
SELECT throws_ok($$SELECT once.deliver('shop', 'm2', 'secret.read', '{}')$$, '42501', NULL,
                 'a handler cannot use the extension owner''s rights');
SELECT throws_ok($$SELECT once.deliver('shop', 'm3', 'peek.x', '{}')$$, '42501', NULL,
                 'a handler cannot read pg_once''s tables');
SELECT throws_ok($$SELECT once.deliver('shop', 'm4', 'private.x', '{}')$$, '42501', NULL,
                 'deliver checks EXECUTE on the handler for the calling role');
SELECT throws_ok($$SELECT once.subscribe('evil.*', 'record_effect(once.inbound)')$$, '42501', NULL,
                 'once_consumer may not subscribe');
SELECT throws_ok($$SELECT once.unsubscribe('order.*')$$, '42501', NULL, 'once_consumer may not unsubscribe');
SELECT throws_ok($$SELECT once.inbox_retry('shop', 'f1')$$, '42501', NULL, 'once_consumer may not retry poison messages');
SELECT throws_ok($$SELECT count(*) FROM once.inbox$$, '42501', NULL, 'once_consumer cannot read the inbox table');
SELECT throws_ok($$INSERT INTO once.inbox (source, message_id) VALUES ('shop', 'forged')$$, '42501', NULL,
                 'once_consumer cannot write the inbox table');
RESET ROLE;

SET ROLE inbox_stranger;
SELECT throws_ok($$SELECT once.receive('shop', 'x')$$, '42501', NULL, 'a role without once_consumer cannot receive');
SELECT throws_ok($$SELECT once.deliver('shop', 'x', 'order.created', '{}')$$, '42501', NULL, 'nor deliver');
RESET ROLE;

SELECT results_eq($$SELECT message_id FROM once.inbox WHERE source = 'shop' ORDER BY 1$$, ARRAY['m1', 'r1'],
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
