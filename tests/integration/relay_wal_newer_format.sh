#!/usr/bin/env bash
# once-relay --transport wal meets a message of a format version it does not read, against a
# real server. One whose tag verifies is a newer extension's: the relay publishes what came
# before it, stops reading there, confirms the slot no further, says so once, sets
# once_wal_newer_format and fails /healthz; what came after it is not published (a relay that
# reads the format takes it from the slot), also after a restart. One whose tag does not verify
# (anybody's pg_logical_emit_message) is skipped as unauthentic and stops nothing.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"

# A format-4 message (newer than this relay reads): version byte 4, then anything; tagged for the emitting transaction
# (lib/wal_message_tag.sql) or not.
psql_src >/dev/null -f "$(dirname "$0")/lib/wal_message_tag.sql"
v4_body=04000102030405060708090a0b0c0d0e0f
emit() { echo "SELECT pg_logical_emit_message(true, 'pg_once', '\\x$1'::bytea) IS NOT NULL;"; }
emit_tagged() { echo "SELECT pg_logical_emit_message(true, 'pg_once', public.pg_once_test_tagged('\\x$1'::bytea)) IS NOT NULL;"; }

psql_src -c "SELECT once.send('t.before', '{}')" >/dev/null
psql_src -c "$(emit "${v4_body}00000000000000000000000000000000")" >/dev/null   # a forged tag
psql_src -c "SELECT once.send('t.middle', '{}')" >/dev/null
before_newer=$(psql_src -c "SELECT pg_current_wal_lsn()")
psql_src -c "BEGIN" -c "SELECT once.send('t.same', '{}')" -c "$(emit_tagged "$v4_body")" -c "COMMIT" >/dev/null
psql_src -c "SELECT once.send('t.after', '{}')" >/dev/null

mport=$(free_port)
start_relay w --db "$SRC_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
newer_format_is() { [ "$(metric once_wal_newer_format)" = "$1" ]; }
once_wait_for "once_wal_newer_format 4" 30 newer_format_is 4 || fail "once_wal_newer_format is '$(metric once_wal_newer_format)'"
published() { jq -r .topic "$T/relay-w.out" 2>/dev/null | tr '\n' ' '; }
three_out() { [ "$(published)" = "t.before t.middle t.same " ]; }
once_wait_for "the messages before it published" 30 three_out || fail "published: $(published)"
slot_confirmed() { psql_src -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'once_relay'"; }
slot_at() { [ "$(psql_src -c "SELECT confirmed_flush_lsn >= '$before_newer' FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = t ]; }
once_wait_for "the slot confirmed up to the transaction before it" 30 slot_at || fail "confirmed_flush_lsn $(slot_confirmed)"
newer_commit=$(psql_src -c "SELECT pg_current_wal_lsn()")   # (past the newer message's commit)
[ "$(psql_src -c "SELECT confirmed_flush_lsn < '$newer_commit' FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = t ] ||
    fail "the slot was confirmed past the unread message: $(slot_confirmed)"
health=$(curl -s -o "$T/health.txt" -w '%{http_code}' "http://127.0.0.1:$mport/healthz")
[ "$health" = 503 ] || fail "/healthz answered $health"
grep -q "stopped before a message of format version 4" "$T/health.txt" || fail "/healthz says: $(cat "$T/health.txt")"
[ "$(metric once_wal_unauthentic_total)" = 1 ] || fail "once_wal_unauthentic_total is $(metric once_wal_unauthentic_total), want 1 (the forged one)"
[ "$(grep -c "WAL stream stopped before a message" "$T/relay-w.log")" = 1 ] || fail "the stop was not logged once"
grep -q "format version 4, this relay reads versions 1 to 3" "$T/relay-w.log" || fail "the log line does not name the version"
published | grep -q t.after && fail "a message after the unread one was published"

# After a restart: the same stop, from the slot's confirmed position (t.same again, as the
# unconfirmed tail always is), t.after still not published. This relay asks for the server's
# LOG messages (client_min_messages): the walsender's reach its log as log lines.
stop_relay w
[ "$RELAY_RC" = 0 ] || fail "relay exited $RELAY_RC"
: >"$T/relay-w.out"
: >"$T/relay-w.log"
start_relay w --db "$SRC_DB options='-c client_min_messages=log'" --sink stdout: --transport wal --poll-interval 100ms \
    --metrics "127.0.0.1:$mport"
once_wait_for "once_wal_newer_format 4 after a restart" 30 newer_format_is 4 || fail "once_wal_newer_format is '$(metric once_wal_newer_format)'"
same_again() { [ "$(published)" = "t.same " ]; }
once_wait_for "t.same again" 30 same_again || fail "published after the restart: $(published)"
[ "$(psql_src -c "SELECT confirmed_flush_lsn < '$newer_commit' FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = t ] ||
    fail "after the restart the slot was confirmed past the unread message: $(slot_confirmed)"
grep -q 'info: replication connection: LOG: starting logical decoding for slot "once_relay"' "$T/relay-w.log" ||
    fail "the walsender's LOG message is not a log line: $(grep -m1 'logical decoding' "$T/relay-w.log")"
grep -q '^LOG:' "$T/relay-w.log" && fail "a server message went raw to stderr: $(grep -m1 '^LOG:' "$T/relay-w.log")"
stop_relay w
[ "$RELAY_RC" = 0 ] || fail "relay exited $RELAY_RC"
say "relay_wal_newer_format: published up to the newer-format message, stopped there (slot, gauge, /healthz, one log line), also after a restart; a forged one skipped; server notices in the log"
