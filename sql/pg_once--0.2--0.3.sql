-- pg_once 0.2 -> 0.3. Written by hand: every change made in sql/src since 0.2 was released,
-- in the order the sections were added. The upgrade test (tests/upgrade/run.sh) checks that
-- a database updated with this script has exactly the catalog of a fresh 0.3 install, and
-- that data written by 0.1 and 0.2 keeps working.

\echo Use "ALTER EXTENSION pg_once UPDATE TO '0.3'" to load this file. \quit

-- ---------------------------------------------------------------------------------------
-- Idempotency keys stored by 0.1 have no owner and were shared by every producer until they
-- expired, with a ttl that had no upper bound (issue 20, finding 7). From 0.3 that window
-- ends at most 24 hours (the default ttl) after the update; the first role to complete or
-- take over such a key becomes its owner (the library does that).
UPDATE once.keys
   SET expires_at = pg_catalog.now() OPERATOR(pg_catalog.+) interval '24 hours'
 WHERE owner IS NULL
   AND expires_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '24 hours');
