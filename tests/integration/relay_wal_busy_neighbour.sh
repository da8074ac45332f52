#!/usr/bin/env bash
# An idle WAL relay keeps its slot near the server's position while another database of the
# cluster writes: the walsender decodes (and skips) the neighbour's WAL and, caught up, sends a
# keepalive with its position; the relay, with nothing unsettled, confirms it, so the slot's
# confirmed and restart positions pass the neighbour's WAL and a restarted relay does not
# decode it again. wal_sender_timeout is 10 minutes here, so the server's timed keepalives
# (every half of it) cannot be what moves the slot within the test's deadline.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical wal_sender_timeout=10min
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'" -c "CREATE DATABASE busy"
slot() { psql_src -c "SELECT $1 - '0/0'::pg_lsn FROM pg_replication_slots WHERE slot_name = 'once_relay'"; }
lsn_now() { psql_src -c "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"; }

start_relay idle --db "$SRC_DB" --sink stdout: --transport wal --poll-interval 100ms
psql_src -c "SELECT once.send('t.first', '{}')" >/dev/null
once_wait_for "the first message" 30 lines_have_ids "$T/relay-idle.out" 1 || fail "the first message was not delivered"

say "the neighbour database writes ~48 MB of WAL while the relay is idle"
before=$(lsn_now)
psql -X -q -v ON_ERROR_STOP=1 -d busy <<'SQL'
CREATE TABLE filler (n int, pad text);
INSERT INTO filler SELECT g, repeat('x', 400) FROM generate_series(1, 100000) g;
INSERT INTO filler SELECT g, repeat('x', 400) FROM generate_series(1, 100000) g;
CHECKPOINT;   -- (logs the running transactions, which lets the restart position move)
INSERT INTO filler SELECT 1, 'after the checkpoint';
SQL
after=$(lsn_now)
[ $((after - before)) -gt $((32 * 1024 * 1024)) ] || fail "the neighbour wrote only $((after - before)) bytes"
confirmed_passed() { [ "$(slot confirmed_flush_lsn)" -ge "$after" ]; }
once_wait_for "the slot confirmed past the neighbour's WAL" 20 confirmed_passed ||
    fail "confirmed_flush_lsn $(slot confirmed_flush_lsn), the neighbour's WAL ends at $after"
restart_passed() { [ "$(slot restart_lsn)" -gt $((after - 4 * 1024 * 1024)) ]; }
once_wait_for "the slot's restart position past most of it" 20 restart_passed ||
    fail "restart_lsn $(slot restart_lsn) is $((after - $(slot restart_lsn))) bytes behind $after"
stop_relay idle
[ "$RELAY_RC" = 0 ] || fail "relay exit $RELAY_RC"
say "PASS"
