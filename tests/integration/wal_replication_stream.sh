#!/usr/bin/env bash
# The WAL transport's reader (daemon/relay/wal/replication_stream) against a real server, through
# tests/tools/wal_dump.cpp: pg_once messages emitted as transactional logical messages arrive
# exactly once per committed transaction, in commit order (not emission order), none of a
# rolled-back transaction or savepoint; a malformed one is reported, not fatal; and the slot
# resumes after the last transaction the reader confirmed, and only after it. And
# once.transport = 'wal' is refused where no slot could decode it (wal_level below logical).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
dump=${ONCE_BUILD_DIR:?}/tests/once-wal-dump
[ -x "$dump" ] || { echo "wal_replication_stream: $dump is not built"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-wal.XXXXXX")
trap 'once_cluster_stop; rm -rf "$work"' EXIT
fails=0
check() { if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi; }
sql() { psql -qtAX -v ON_ERROR_STOP=1 -d postgres "$@"; }

# Below wal_level = logical no slot could decode a WAL message, and a message nobody can read
# is lost: once.transport refuses 'wal' there, and a database set to 'wal' sends to the table.
once_cluster_start fsync=off wal_level=replica
sql -c "CREATE EXTENSION pg_once" >/dev/null 2>&1
refused=$(psql -qtAX -d postgres -c "SELECT once.send('t.load', '{}')" -c "SET once.transport = 'wal'" 2>&1 >/dev/null || true)
check "SET once.transport = 'wal' is refused below wal_level = logical" grep -q "requires wal_level = logical" <<<"$refused"
sql -c "ALTER DATABASE postgres SET once.transport = 'wal'" >/dev/null  # a new session: the library is not loaded yet
check "a session of a database set to 'wal' below wal_level = logical sends to the table" \
    test "$(sql -c "SELECT once.send('t.fallback', '{}') IS NOT NULL" -c "SHOW once.transport" \
                -c "SELECT count(*) FROM once.outbox WHERE topic = 't.fallback'" 2>/dev/null | tr '\n' ' ')" = "t table 1 "
once_cluster_stop

once_cluster_start fsync=off wal_level=logical
conninfo="host=$PGHOST port=$PGPORT user=$PGUSER dbname=postgres"

sql >/dev/null 2>&1 -c "CREATE EXTENSION pg_once"  # (its key tags the messages built below)
sql >/dev/null -f "$(dirname "$0")/lib/wal_message_tag.sql"
sql >/dev/null <<'SQL'
CREATE PUBLICATION once_wal_test;  -- no tables: the stream carries only logical messages
SELECT pg_create_logical_replication_slot('once_wal_test', 'pgoutput');
-- The content of a pg_once WAL message (extension/src/core/wal_message.hpp), built here in
-- SQL from the documented layout, independently of the C++ encoder, and tagged with the
-- database's key for the emitting transaction (lib/wal_message_tag.sql). Message n has the id
-- 00000000-0000-0000-0000-<n> and created_at 1764150000000000 + n.
CREATE FUNCTION tagged(body bytea) RETURNS bytea
LANGUAGE sql AS $$ SELECT public.pg_once_test_tagged(body) $$;
CREATE FUNCTION wal_msg(n int, topic text, key text, headers text, payload text) RETURNS bytea
LANGUAGE sql AS $$
  SELECT tagged('\x01'::bytea
      || uuid_send(('00000000-0000-0000-0000-' || lpad(n::text, 12, '0'))::uuid)
      || int8send(1764150000000000 + n)
      || int2send(octet_length(topic)::int2) || convert_to(topic, 'UTF8')
      || CASE WHEN key IS NULL THEN '\xffff'::bytea
              ELSE int2send(octet_length(key)::int2) || convert_to(key, 'UTF8') END
      || CASE WHEN headers IS NULL THEN '\xffffffff'::bytea
              ELSE int4send(octet_length(headers)) || convert_to(headers, 'UTF8') END
      || int4send(octet_length(payload)) || convert_to(payload, 'UTF8'))
$$;
CREATE FUNCTION emit(n int, topic text, key text DEFAULT NULL, headers text DEFAULT NULL,
                     payload text DEFAULT '{}') RETURNS int
LANGUAGE sql AS $$
  SELECT n FROM pg_logical_emit_message(true, 'pg_once', wal_msg(n, topic, key, headers, payload))
$$;
SQL

# Committed, two messages in one transaction.
sql -c "BEGIN" -c "SELECT emit(1, 't.one', 'k1', '{\"h\":\"v\"}', '{\"n\":1}')" -c "SELECT emit(2, 't.two')" \
    -c "COMMIT" >/dev/null
# Rolled back: never delivered.
sql -c "BEGIN" -c "SELECT emit(90, 't.rolled')" -c "ROLLBACK" >/dev/null
# Emitted first, committed last: transaction A emits t.a1, B commits t.b1, A emits t.a2 and
# commits. Commit order is t.b1, t.a1, t.a2.
coproc session_a { psql -qtAX -v ON_ERROR_STOP=1 -d postgres; }
session_a_pid=$session_a_PID  # bash unsets session_a_PID as soon as the coprocess has exited
await_a() {  # reads session A's output until the marker line
    local line
    while read -r -t 30 line <&"${session_a[0]}"; do [ "$line" = "$1" ] && return 0; done
    echo "session A never printed $1" >&2
    return 1
}
echo "BEGIN; SELECT emit(4, 't.a1'); \\echo A1" >&"${session_a[1]}"
await_a A1
sql -c "SELECT emit(3, 't.b1')" >/dev/null
echo "SELECT emit(5, 't.a2'); COMMIT; \\echo A2" >&"${session_a[1]}"
await_a A2
exec {session_a[1]}>&-
wait "$session_a_pid" 2>/dev/null || true  # its errors showed above: a failed statement prints no marker
# A rolled-back savepoint inside a committed transaction.
sql -c "BEGIN" -c "SELECT emit(6, 't.s1')" -c "SAVEPOINT s" -c "SELECT emit(91, 't.rolled')" \
    -c "ROLLBACK TO SAVEPOINT s" -c "SELECT emit(7, 't.s3')" -c "COMMIT" >/dev/null
# Another prefix is skipped; a pg_once message of an unknown format version is reported (as a
# newer extension's: without a key to verify tags, this reader takes every message as authentic).
sql -c "SELECT pg_logical_emit_message(true, 'other', 'x')" \
    -c "SELECT pg_logical_emit_message(true, 'pg_once', '\\x04'::bytea)" >/dev/null
# once.send itself (once.transport = 'wal'): the extension's encoder and tag, read by the relay's decoder.
sql -c "SET once.transport = 'wal'" -c "SELECT once.send('t.sent', '{\"n\": 10}')" >/dev/null
# The sentinel: each run reads until its transaction ends.
sql -c "SELECT emit(8, 't.end')" >/dev/null

# sequence FILE: the topics of the messages in FILE in order, "malformed" or "newer" for a message it cannot read.
sequence() { awk '$1 == "msg" { printf "%s ", $5 } $1 == "malformed" || $1 == "newer" { printf "%s ", $1 }' "$1"; }
slot_state() { sql -c "SELECT active, confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'once_wal_test'"; }
slot_released_at() {  # the reader's walsender has exited and the slot is confirmed at LSN $1
    test "$(sql -c "SELECT NOT active AND confirmed_flush_lsn = '$1'::pg_lsn FROM pg_replication_slots
                    WHERE slot_name = 'once_wal_test'")" = t
}
run_dump() {  # run_dump NAME [--confirm-after N]
    local name=$1
    shift
    "$dump" "$conninfo" once_wal_test once_wal_test --until-topic t.end --timeout-seconds 60 "$@" >"$work/$name.out" \
        || { cat "$work/$name.out"; return 1; }
}
all="t.one t.two t.b1 t.a1 t.a2 t.s1 t.s3 newer t.sent t.end "

confirmed_before=$(slot_state)
run_dump first --confirm-after 3
check "the first read gets every committed message once, in commit order, none rolled back" \
    test "$(sequence "$work/first.out")" = "$all"
check "message 1 decodes with id, created_at, topic, key, headers and payload" \
    test "$(awk '$1 == "msg" && $5 == "t.one" { $1 = ""; $2 = ""; print }' "$work/first.out")" \
    = '  00000000-0000-0000-0000-000000000001 1764150000000001 t.one k1 {"h":"v"} {"n":1}'
check "a message of once.send in wal mode decodes: no key, no headers, the payload as jsonb prints it" \
    test "$(awk '$1 == "msg" && $5 == "t.sent" { print $6, $7, $8, $9 }' "$work/first.out")" = '- - {"n": 10}'
check "absent key and headers decode as absent" \
    test "$(awk '$1 == "msg" && $5 == "t.two" { print $6, $7, $8 }' "$work/first.out")" = '- - {}'
commit_of() { awk -v t="$2" '$1 == "msg" && $5 == t { print $2 }' "$1"; }
check "messages of one transaction share its commit LSN, another transaction's differs" \
    test "$(commit_of "$work/first.out" t.a1)" = "$(commit_of "$work/first.out" t.a2)" -a \
         "$(commit_of "$work/first.out" t.a1)" != "$(commit_of "$work/first.out" t.b1)"
check "the newer-format message names its format version" grep -q "^newer .*format version 4" "$work/first.out"
first_confirmed=$(awk '$1 == "confirmed" { print $2 }' "$work/first.out" | tail -n 1)
b1_end=$(awk -v c="$(commit_of "$work/first.out" t.b1)" '$1 == "end" && $2 == c { print $3 }' "$work/first.out")
check "with the first three messages settled, the reader confirmed up to the end of t.b1's transaction" \
    test -n "$first_confirmed" -a "$first_confirmed" = "$b1_end"
once_wait_for "the slot to be released, confirmed at $first_confirmed" 30 slot_released_at "$first_confirmed"
check "the slot moved from where it was to the confirmed position" test "$(slot_state)" != "$confirmed_before"

run_dump second
check "after reconnecting, delivery resumes after t.b1: the later messages again, none before" \
    test "$(sequence "$work/second.out")" = "t.a1 t.a2 t.s1 t.s3 newer t.sent t.end "
once_wait_for "the second reader to release the slot" 30 slot_released_at "$first_confirmed"
check "reading without confirming leaves the slot where it was" slot_released_at "$first_confirmed"

# Confirming after t.a2 confirms its whole transaction (t.a1 with it).
run_dump third --confirm-after 2
check "the unconfirmed messages are delivered again" \
    test "$(sequence "$work/third.out")" = "t.a1 t.a2 t.s1 t.s3 newer t.sent t.end "
third_confirmed=$(awk '$1 == "confirmed" { print $2 }' "$work/third.out" | tail -n 1)
once_wait_for "the slot to be confirmed at $third_confirmed" 30 slot_released_at "$third_confirmed"
# One of transaction S's two messages settled: S is not confirmed, the slot stays.
run_dump fourth --confirm-after 1
check "after confirming transaction A, delivery resumes with the next transaction" \
    test "$(sequence "$work/fourth.out")" = "t.s1 t.s3 newer t.sent t.end "
check "with only one of a transaction's messages settled, nothing is confirmed" \
    bash -c "! grep -q '^confirmed' '$work/fourth.out'"
once_wait_for "the fourth reader to release the slot" 30 slot_released_at "$third_confirmed"
run_dump fifth
check "... and the whole transaction is delivered again" \
    test "$(sequence "$work/fifth.out")" = "t.s1 t.s3 newer t.sent t.end "

# An idle slot: with everything settled, the reader confirms the position of a keepalive, so
# WAL that other transactions wrote (no pg_once message, nothing decoded) is not held.
sql -c "CREATE TABLE unrelated AS SELECT g FROM generate_series(1, 1000) g" >/dev/null
unrelated_end=$(sql -c "SELECT pg_current_wal_lsn()")
slot_released_past() {
    test "$(sql -c "SELECT NOT active AND confirmed_flush_lsn >= '$1'::pg_lsn FROM pg_replication_slots
                    WHERE slot_name = 'once_wal_test'")" = t
}
run_dump sixth --confirm-after 1000 --idle-past "$unrelated_end"
sixth_confirmed=$(awk '$1 == "confirmed" { print $2 }' "$work/sixth.out" | tail -n 1)
check "after the last message, an idle reader confirms past the unrelated WAL" \
    test "$(sql -c "SELECT '${sixth_confirmed:-0/0}'::pg_lsn >= '$unrelated_end'::pg_lsn")" = t
once_wait_for "the slot to be confirmed past the unrelated WAL" 30 slot_released_past "$unrelated_end"
sql -c "SELECT emit(9, 't.end')" >/dev/null
run_dump seventh
check "... and after it only what was sent since is delivered" test "$(sequence "$work/seventh.out")" = "t.end "

# Failures are clear errors and never show the conninfo (it may hold a password; trust
# authentication ignores this one).
secret_conninfo="$conninfo password=wal-secret-4711"
"$dump" "$secret_conninfo" no_such_slot once_wal_test --until-topic t.end --timeout-seconds 10 \
    >/dev/null 2>"$work/missing.err" && missing=started || missing=refused
check "a slot that does not exist is a clear error" \
    test "$missing:$(grep -c 'no_such_slot.*does not exist' "$work/missing.err")" = "refused:1"
check "... that does not show the password" bash -c "! grep -q wal-secret-4711 '$work/missing.err'"
"$dump" "$conninfo" once_wal_test bad-name --until-topic t.end --timeout-seconds 10 >/dev/null 2>"$work/badpub.err" \
    && badpub=started || badpub=refused
check "a publication name that would need quoting is refused before connecting" \
    test "$badpub:$(grep -c 'publication name "bad-name"' "$work/badpub.err")" = "refused:1"
# A slot serves one reader: a second one is refused while the first streams.
coproc holder { exec "$dump" "$conninfo" once_wal_test once_wal_test --until-topic t.never --timeout-seconds 60; }
holder_pid=$holder_PID
slot_active() { test "$(sql -c "SELECT active FROM pg_replication_slots WHERE slot_name = 'once_wal_test'")" = t; }
once_wait_for "the first reader to hold the slot" 30 slot_active
"$dump" "$conninfo" once_wal_test once_wal_test --until-topic t.end --timeout-seconds 10 >/dev/null 2>"$work/busy.err" \
    && busy=started || busy=refused
check "a second reader of a busy slot is refused, naming the slot" \
    test "$busy:$(grep -c 'once_wal_test.*is active' "$work/busy.err")" = "refused:1"
kill "$holder_pid" 2>/dev/null || true
wait "$holder_pid" 2>/dev/null || true

[ "$fails" -eq 0 ] || { echo "wal_replication_stream: $fails checks failed"; exit 1; }
echo "wal_replication_stream: all checks passed"
