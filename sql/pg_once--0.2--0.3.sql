-- pg_once 0.2 -> 0.3. Written by hand: every change made in sql/src since 0.2 was released,
-- in the order the sections were added. The upgrade test (tests/upgrade/run.sh) checks that
-- a database updated with this script has exactly the catalog of a fresh 0.3 install, and
-- that data written by 0.1 and 0.2 keeps working.

\echo Use "ALTER EXTENSION pg_once UPDATE TO '0.3'" to load this file. \quit
