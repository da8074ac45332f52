#!/usr/bin/env bash
# A genuine WAL message replayed is never published. A CDC tool's account (REPLICATION, no
# pg_once grant) reads once.send's message from a slot of its own; a role with no grant at all
# then emits those bytes again with pg_logical_emit_message, three times. The tag binds the
# message to the system identifier, the database and the emitting transaction's xid
# (core/wal_message.hpp), so the relay publishes the original once and the replays never: they
# are counted as unauthentic (once_wal_unauthentic_total) and logged. Then the optional
# hardening of docs/security.md: EXECUTE on pg_logical_emit_message revoked from PUBLIC, the
# role without grants can no longer emit, and a producer's once.send (which does not call the
# function) is still published.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<'SQL'
ALTER DATABASE src SET once.transport = 'wal';
CREATE ROLE cdc LOGIN REPLICATION;     -- a CDC tool's account: no pg_once grant
CREATE ROLE mallory LOGIN;             -- no grant at all
CREATE ROLE producer LOGIN IN ROLE once_producer;
SQL
as_role() { local r=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -At -U "$r" -d src "$@"; }
as_role cdc -c "SELECT pg_create_logical_replication_slot('cdc', 'pgoutput') IS NOT NULL" >/dev/null
psql_src -c "CREATE PUBLICATION cdc_pub" >/dev/null   # (no tables: the messages only)

genuine=$(psql_src -c "SELECT once.send('t.genuine', '{\"n\": 1}')")
# pgoutput's Message: 'M', flags, LSN (8 bytes), prefix "pg_once" and NUL, length (4), content.
captured=$(as_role cdc -c "SELECT encode(substring(data FROM 23), 'hex')
  FROM pg_logical_slot_get_binary_changes('cdc', NULL, NULL, 'proto_version', '1', 'publication_names', 'cdc_pub',
                                          'messages', 'true')
 WHERE get_byte(data, 0) = ascii('M') AND substring(data FROM 11 FOR 8) = '\\x70675f6f6e636500'::bytea")
[ -n "$captured" ] && [ "$(wc -l <<<"$captured")" = 1 ] || fail "captured: '$captured'"
[ "$(psql_src -c "SELECT substring('\\x$captured'::bytea FROM 2 FOR 16) = uuid_send('$genuine')")" = t ] ||
    fail "the captured message is not once.send's"
for i in 1 2 3; do
    as_role mallory -c "SELECT pg_logical_emit_message(true, 'pg_once', '\\x$captured'::bytea) IS NOT NULL" >/dev/null
done
psql_src >/dev/null <<'SQL'
DO $$DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE proname = 'pg_logical_emit_message' LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
  END LOOP;
END$$;
SQL
err=$(as_role mallory -c "SELECT pg_logical_emit_message(true, 'pg_once', '\\x$captured'::bytea)" 2>&1) &&
    fail "mallory emitted after the REVOKE"
grep -q "permission denied for function pg_logical_emit_message" <<<"$err" || fail "after the REVOKE: $err"
after=$(as_role producer -c "SELECT once.send('t.after', '{\"n\": 2}')")
[ "$(psql_src -c "SELECT count(*) FROM once.outbox WHERE id = '$after'")" = 0 ] || fail "t.after went to the table, not the WAL"

mport=$(free_port)
start_relay w --db "$SRC_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
after_out() { grep -q "$after" "$T/relay-w.out" 2>/dev/null; }
once_wait_for "the message after the replays" 30 after_out || fail "not published: $(cat "$T/relay-w.out") $(tail -5 "$T/relay-w.log")"
unauthentic_is() { [ "$(metric once_wal_unauthentic_total)" = "$1" ]; }
once_wait_for "once_wal_unauthentic_total 3" 10 unauthentic_is 3 ||
    fail "once_wal_unauthentic_total is $(metric once_wal_unauthentic_total), want 3 (the replays)"
stop_relay w
[ "$RELAY_RC" = 0 ] || fail "relay exited $RELAY_RC"
[ "$(grep -c "$genuine" "$T/relay-w.out")" = 1 ] ||
    fail "the genuine message was published $(grep -c "$genuine" "$T/relay-w.out") times: $(cat "$T/relay-w.out")"
[ "$(wc -l <"$T/relay-w.out")" = 2 ] || fail "published: $(cat "$T/relay-w.out")"
grep -q "skipped a pg_once message at .*does not verify for this transaction" "$T/relay-w.log" ||
    fail "no log line for the replay: $(grep -i skipped "$T/relay-w.log")"
say "relay_wal_replay: the original published once, its three replays by a role without grants never (counted, logged)"
