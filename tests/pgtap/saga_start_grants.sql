-- Who may start which saga definition. On 0.2 any producer
-- could start any definition, so it could take another service's saga id first: the
-- rightful starter then got ON404, or, with the same name and input, the squatter's saga.
-- Once an admin grants the start of a definition, only granted roles (and roles with their
-- privileges) may start it (ON407); a definition without grants stays open, as in 0.2.
BEGIN;
SELECT plan(17);

SELECT once.saga_define('payment', $${"steps": [{"name": "charge", "action": {"topic": "pay.charge"}}]}$$);
SELECT once.saga_define('newsletter', $${"steps": [{"name": "mail", "action": {"topic": "mail.send"}}]}$$);
CREATE ROLE payments_svc LOGIN IN ROLE once_producer;
CREATE ROLE payments_team NOLOGIN;
CREATE ROLE payments_worker LOGIN IN ROLE once_producer, payments_team;
CREATE ROLE squatter LOGIN IN ROLE once_producer;
CREATE ROLE start_admin LOGIN IN ROLE once_admin;

SET ROLE squatter;
SELECT throws_ok($$SELECT once.grant_saga_start('squatter', 'payment')$$, '42501', NULL,
                 'a producer cannot grant itself a start');
RESET ROLE;

SET ROLE start_admin;
SELECT is(once.grant_saga_start('payments_svc', 'payment'), true, 'the admin grants payments_svc the start of payment');
SELECT is(once.grant_saga_start('payments_svc', 'payment'), false, '... once');
SELECT is(once.grant_saga_start('payments_team', 'payment'), true, '... and a group role');
SELECT throws_ok($$SELECT once.grant_saga_start(NULL, 'payment')$$, '22023', NULL, 'NULL role: 22023');
SELECT throws_ok($$SELECT once.grant_saga_start('squatter', '')$$, 'ON401', NULL, 'empty saga name: ON401');
SELECT is((SELECT count(*) FROM once.saga_start_grants WHERE name = 'payment'), 2::bigint, 'the admin reads the grants');
RESET ROLE;

-- The squat: the squatter starts the victim's saga id first.
SET ROLE squatter;
SELECT throws_ok($$SELECT once.saga_start('payment', 'order-42', '{"amount": 5}')$$, 'ON407', NULL,
                 'a role without a start grant cannot start the definition, so cannot take its ids (ON407)');
SELECT is(once.saga_start('newsletter', 'nl-1'), 'nl-1', 'a definition without grants is open to every producer, as in 0.2');
RESET ROLE;

SET ROLE payments_svc;
SELECT is(once.saga_start('payment', 'order-42', '{"amount": 5}'), 'order-42', 'the granted role starts its saga');
RESET ROLE;
SELECT is((SELECT started_by::regrole::text FROM once.saga_instances WHERE saga_id = 'order-42'), 'payments_svc',
          '... and the saga is its own');
SET ROLE payments_worker;
SELECT is(once.saga_start('payment', 'order-43'), 'order-43', 'a member of a granted group role may start it');
RESET ROLE;
SELECT is(once.saga_start('payment', 'order-44'), 'order-44', 'a superuser may start it');

SET ROLE start_admin;
SELECT is(once.revoke_saga_start('payments_team', 'payment'), 1, 'the admin revokes the group''s grant');
RESET ROLE;
SET ROLE payments_worker;
SELECT throws_ok($$SELECT once.saga_start('payment', 'order-45')$$, 'ON407', NULL, '... and its member is refused');
RESET ROLE;
SET ROLE start_admin;
SELECT is(once.revoke_saga_start('payments_svc'), 1, 'revoking every grant of a role');
RESET ROLE;
SET ROLE squatter;
SELECT is(once.saga_start('payment', 'order-46'), 'order-46', 'a definition whose last grant is revoked is open again');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
