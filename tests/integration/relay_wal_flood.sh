#!/usr/bin/env bash
# A role with no grant cannot inflate a WAL relay nor flood its log: pg_logical_emit_message is
# executable by every role, so anyone can put "pg_once" messages into the stream. Here one of
# 64 MB (longer than once.send writes: the relay skips it from its declared length, neither
# hashed nor decoded) and 50,000 one-byte ones in one statement. The relay's peak memory stays
# within a bound (libpq holds a whole frame, and hands out a copy of it: about twice the
# message, which nothing in the relay can avoid), its log gets a line for the first skipped
# message and then at most one line per 10 seconds with the count, once_wal_unauthentic_total
# counts them all, and genuine messages before and after are published.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical max_wal_size=1GB
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<'SQL'
ALTER DATABASE src SET once.transport = 'wal';
CREATE ROLE mallory LOGIN;   -- no grant at all
SQL
as_mallory() { psql -X -q -v ON_ERROR_STOP=1 -At -U mallory -d src "$@"; }
before=$(psql_src -c "SELECT once.send('t.before', '{\"n\": 1}')")
as_mallory -c "SELECT pg_logical_emit_message(true, 'pg_once', convert_to(repeat('x', 64 * 1024 * 1024), 'UTF8')) IS NOT NULL" >/dev/null
as_mallory -c "SELECT count(pg_logical_emit_message(true, 'pg_once', '\\x01'::bytea)) FROM generate_series(1, 50000)" >/dev/null
after=$(psql_src -c "SELECT once.send('t.after', '{\"n\": 2}')")

mport=$(free_port)
start_relay w --db "$SRC_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
after_out() { grep -q "$after" "$T/relay-w.out" 2>/dev/null; }
once_wait_for "the genuine message after the flood" 60 after_out || fail "not published: $(tail -5 "$T/relay-w.log")"
grep -q "$before" "$T/relay-w.out" || fail "the genuine message before the flood was not published"
unauthentic_is() { [ "$(metric once_wal_unauthentic_total)" = "$1" ]; }
once_wait_for "once_wal_unauthentic_total 50001" 10 unauthentic_is 50001 ||
    fail "once_wal_unauthentic_total is $(metric once_wal_unauthentic_total), want 50001"
# The held-back count is logged once the interval has passed.
summary() { grep -q "skipped [0-9]* pg_once messages since the last such line" "$T/relay-w.log"; }
once_wait_for "the summary line" 30 summary || fail "no summary line: $(grep -c skipped "$T/relay-w.log") skipped lines"
hwm_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$(relay_pid w)/status")
stop_relay w
[ "$RELAY_RC" = 0 ] || fail "relay exited $RELAY_RC"
lines=$(grep -c "WAL stream: skipped" "$T/relay-w.log")
[ "$lines" -le 4 ] || fail "$lines log lines for the skipped messages (want at most 4)"
grep -q "skipped a pg_once message at .*longer than once.send writes" "$T/relay-w.log" ||
    fail "the first line is not the 64 MB message's: $(grep -m1 skipped "$T/relay-w.log")"
skipped_total=$(grep -o "skipped [0-9]* pg_once messages" "$T/relay-w.log" | awk '{ s += $2 } END { print s + 0 }')
[ "$skipped_total" = 50000 ] || fail "the summary lines count $skipped_total messages, want 50000"
[ "$(wc -l <"$T/relay-w.out")" = 2 ] || fail "published: $(cut -c1-200 "$T/relay-w.out")"
# libpq's input buffer (doubled up to the frame's size) and PQgetCopyData's copy of the frame.
limit_kb=$((64 * 1024 * 3 + 48 * 1024))
[ "$hwm_kb" -le "$limit_kb" ] || fail "the relay's peak memory is ${hwm_kb} kB (bound ${limit_kb} kB)"
say "relay_wal_flood: 64 MB and 50,000 one-byte messages from a role without grants: peak ${hwm_kb} kB, $lines log lines, counted; genuine ones published"
