#!/usr/bin/env bash
# once-relay --transport wal against a real server (wal_level = logical), stdout sink:
#  * --create-wal-slot / --drop-wal-slot create and drop the publication and slot, and refuse
#    clearly when the slot exists or is missing;
#  * N producers send with once.transport = 'wal': every message committed is delivered once,
#    exactly as sent (id, topic, payload), none of a rolled-back transaction; keyed messages
#    still go through the table and are delivered from there, by the same relay;
#  * kill -9 mid-stream, then a restart: every message delivered at least once, and the
#    duplicates are exactly the first run's unconfirmed tail; the slot's confirmed_flush_lsn
#    advances;
#  * messages carry an HMAC tag under the database's key (once.wal_secret()): a correctly
#    tagged message is delivered, an untagged or wrongly tagged one is skipped and logged.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
PRODUCERS=${RELAY_WAL_PRODUCERS:-4}
PER=${RELAY_WAL_PER_PRODUCER:-500}   # transactions of 2 messages per producer
BACKLOG=${RELAY_WAL_BACKLOG:-200000}

start_postgres fsync=off wal_level=logical
relay_cmd() { "${RELAY_AS[@]}" "$RELAY_BIN" "$@"; }
slot_lsn() { psql_src -c "SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots WHERE slot_name = 'once_relay'"; }
ids_of() { jq -r .id "$1"; }

say "--create-wal-slot / --drop-wal-slot"
out=$(relay_cmd --db "$SRC_DB" --create-wal-slot 2>&1) || fail "--create-wal-slot: $out"
grep -q "created publication once_outbox" <<<"$out" || fail "no publication created: $out"
[ "$(psql_src -c "SELECT plugin, slot_type FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = "pgoutput|logical" ] ||
    fail "no pgoutput slot once_relay"
out=$(relay_cmd --db "$SRC_DB" --create-wal-slot 2>&1) && fail "a second --create-wal-slot succeeded: $out"
grep -q "slot once_relay exists already" <<<"$out" || fail "unclear refusal of an existing slot: $out"
out=$(relay_cmd --db "$SRC_DB" --drop-wal-slot 2>&1) || fail "--drop-wal-slot: $out"
[ "$(psql_src -c "SELECT count(*) FROM pg_replication_slots")" = 0 ] || fail "the slot is still there"
out=$(relay_cmd --db "$SRC_DB" --drop-wal-slot 2>&1) && fail "dropping a missing slot succeeded: $out"
grep -q "there is no replication slot once_relay" <<<"$out" || fail "unclear refusal of a missing slot: $out"
out=$(relay_cmd --db "$SRC_DB" --create-wal-slot 2>&1) || fail "--create-wal-slot again: $out"
say "$out"
grep -q "publication once_outbox exists" <<<"$out" || fail "the publication was not reused: $out"
if [ "$(psql_src -c "SHOW server_version_num")" -ge 170000 ]; then   # a standby with sync_replication_slots keeps it
    [ "$(psql_src -c "SELECT failover FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = t ] ||
        fail "the slot was created without failover on 17+"
fi

psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"
[ "$(psql_src -c "SELECT once.send('t.probe', '{}') IS NOT NULL" -c "SELECT count(*) FROM once.outbox")" = $'t\n0' ] ||
    fail "once.send with once.transport = 'wal' wrote a row"
slot0=$(slot_lsn)

say "$PRODUCERS producers x $PER transactions, with rolled-back ones and keyed ones"
start_relay w1 --db "$SRC_DB" --sink stdout: --transport wal --batch 200 --poll-interval 100ms
producer() {
    local p=$1 i
    for ((i = 1; i <= PER; i++)); do
        echo "BEGIN;"
        echo "SELECT once.send('t.w', jsonb_build_object('p', $p, 'i', $i, 's', 'a'))::text || '|t.w|' || jsonb_build_object('p', $p, 'i', $i, 's', 'a')::text;"
        echo "SELECT once.send('t.w', jsonb_build_object('p', $p, 'i', $i, 's', 'b'))::text || '|t.w|' || jsonb_build_object('p', $p, 'i', $i, 's', 'b')::text;"
        if ((i % 10 == 0)); then
            echo "SELECT once.send('t.k', jsonb_build_object('p', $p, 'i', $i), key => 'k$p')::text || '|t.k|' || jsonb_build_object('p', $p, 'i', $i)::text;"
        fi
        echo "COMMIT;"
        if ((i % 7 == 0)); then
            echo "BEGIN; SELECT once.send('t.rolled', '{\"rolled\": true}') IS NULL; ROLLBACK;"
        fi
    done | psql_src >"$T/sent-$p.txt"
}
pids=()
for ((p = 1; p <= PRODUCERS; p++)); do producer "$p" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid" || fail "a producer failed"; done
grep -hv '^[tf]$' "$T"/sent-*.txt | sort >"$T/sent.txt"
total=$(( PRODUCERS * PER * 2 + PRODUCERS * (PER / 10) + 1 ))   # (+ t.probe)
[ "$(wc -l <"$T/sent.txt")" = $(( total - 1 )) ] || fail "producers sent $(wc -l <"$T/sent.txt"), want $(( total - 1 ))"
[ "$(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 't.w'")" = 0 ] || fail "unkeyed messages went to the table"
delivered() { [ "$(jq -r .id "$T/relay-w1.out" 2>/dev/null | sort -u | wc -l)" -ge "$1" ]; }
once_wait_for "all $total delivered" 120 delivered "$total" || fail "delivered $(wc -l <"$T/relay-w1.out") of $total"
once_wait_for "the table drained" 30 outbox_empty || fail "outbox still has $(outbox_left)"
jq -r 'select(.topic != "t.probe") | .id + " " + .topic + " " + (.payload | tostring)' "$T/relay-w1.out" | sort >"$T/got.txt"
# jq prints the payload compactly, jsonb with spaces: compare both in jq's form.
jq -R -r 'split("|") as $f | $f[0] + " " + $f[1] + " " + ($f[2] | fromjson | tojson)' "$T/sent.txt" | sort >"$T/sent-c.txt"
diff -q "$T/sent-c.txt" "$T/got.txt" >/dev/null || fail "delivered differs from sent: $(diff "$T/sent-c.txt" "$T/got.txt" | head -5)"
[ "$(jq -r .id "$T/relay-w1.out" | sort | uniq -d | wc -l)" = 0 ] || fail "duplicates without a crash"
grep -q t.rolled "$T/relay-w1.out" && fail "a message of a rolled-back transaction was delivered"
confirmed_moved() { [ "$(slot_lsn)" -gt "$slot0" ]; }
once_wait_for "the slot's confirmed_flush_lsn to advance" 30 confirmed_moved || fail "confirmed_flush_lsn stayed at $slot0"
stop_relay w1
[ "$RELAY_RC" = 0 ] || fail "relay w1 exited $RELAY_RC"
say "delivered $total exactly as sent ($((PRODUCERS * (PER / 10))) keyed ones through the table), none rolled back"

say "kill -9 mid-stream: a backlog of $BACKLOG in 1000-message transactions"
for ((b = 0; b < BACKLOG / 1000; b++)); do
    echo "SELECT count(*) FROM (SELECT once.send('t.b', jsonb_build_object('n', $b * 1000 + n)) FROM generate_series(1, 1000) n) s;"
done | psql_src >/dev/null
before_kill=$(slot_lsn)
# Small batches and window: slow enough that the kill lands mid-stream.
start_relay w2 --db "$SRC_DB" --sink stdout: --transport wal --batch 10 --max-in-flight 10 --poll-interval 100ms
lines() { [ -f "$T/relay-w2.out" ] && [ "$(wc -l <"$T/relay-w2.out")" -ge "$1" ]; }
confirmed_past() { [ "$(slot_lsn)" -gt "$1" ]; }
once_wait_for "the slot confirmed by relay w2" 60 confirmed_past "$before_kill" || fail "relay w2 confirmed nothing"
kill9_relay w2
run1=$(wc -l <"$T/relay-w2.out")
[ "$run1" -lt "$BACKLOG" ] || fail "relay w2 finished the backlog before the kill: no crash tested (raise RELAY_WAL_BACKLOG)"
start_relay w3 --db "$SRC_DB" --sink stdout: --transport wal --batch 100 --poll-interval 100ms
w3_has() { [ -f "$T/relay-w3.out" ] && [ "$(wc -l <"$T/relay-w3.out")" -ge "$1" ]; }
once_wait_for "relay w3 to deliver what w2 did not" 180 w3_has $((BACKLOG - run1)) || fail "relay w3 stuck at $(wc -l <"$T/relay-w3.out" 2>/dev/null)"
all_b() { [ "$(cat "$T/relay-w2.out" "$T/relay-w3.out" 2>/dev/null | jq -r .id | sort -u | wc -l)" -ge "$BACKLOG" ]; }
once_wait_for "all $BACKLOG delivered after the restart" 120 all_b || fail "delivered $(cat "$T"/relay-w[23].out | jq -r .id | sort -u | wc -l) of $BACKLOG"
stop_relay w3
ids_of "$T/relay-w2.out" >"$T/run1.txt"
ids_of "$T/relay-w3.out" >"$T/run2.txt"
dups=$(sort "$T/run1.txt" "$T/run2.txt" | uniq -d | wc -l)
# Run 2 starts at the slot's confirmed position: its first $dups messages are run 1's last ones.
diff -q <(tail -n "$dups" "$T/run1.txt") <(head -n "$dups" "$T/run2.txt") >/dev/null ||
    fail "the duplicates are not run 1's unconfirmed tail"
[ "$(sort "$T/run2.txt" | uniq -d | wc -l)" = 0 ] || fail "run 2 delivered a message twice"
say "kill -9 after $run1 of $BACKLOG: $dups duplicate(s), all of them run 1's unconfirmed tail"

say "tagged messages (the key of once.wal_secret())"
psql_src >/dev/null -f "$(dirname "$0")/lib/wal_message_tag.sql"
psql_src >/dev/null <<SQL
CREATE FUNCTION public.wal_body(n int) RETURNS bytea LANGUAGE sql AS \$\$
  SELECT '\\x01'::bytea || uuid_send(('00000000-0000-0000-0000-' || lpad(n::text, 12, '0'))::uuid)
      || int8send(1764150000000000) || int2send(5::int2) || convert_to('t.tag', 'UTF8') || '\\xffff'::bytea
      || '\\xffffffff'::bytea || int4send(octet_length('{"n": ' || n || '}'))
      || convert_to('{"n": ' || n || '}', 'UTF8') \$\$;
SQL
# 1 and 5 tagged in their own transaction; 2 untagged; 3 with 4's tag.
tag_of() { echo "substring(public.pg_once_test_tagged(public.wal_body($1)) FROM octet_length(public.wal_body($1)) + 1)"; }
psql_src -c "SELECT pg_logical_emit_message(true, 'pg_once', public.wal_body(1) || $(tag_of 1))" \
    -c "SELECT pg_logical_emit_message(true, 'pg_once', public.wal_body(2))" \
    -c "SELECT pg_logical_emit_message(true, 'pg_once', public.wal_body(3) || $(tag_of 4))" \
    -c "SELECT pg_logical_emit_message(true, 'pg_once', public.wal_body(5) || $(tag_of 5))" >/dev/null
mport=$(free_port)
start_relay w4 --db "$SRC_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
tagged_done() { [ -f "$T/relay-w4.out" ] && grep -q 00000000-0000-0000-0000-000000000005 "$T/relay-w4.out"; }
once_wait_for "the last tagged message" 30 tagged_done || fail "the tagged messages were not delivered"
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
has_metric() { [ -n "$(metric "$1")" ]; }
once_wait_for "once_wal_slot_lag_bytes" 30 has_metric once_wal_slot_lag_bytes || fail "no once_wal_slot_lag_bytes on /metrics"
# docs/relay-operations.md, "Database connections": 7 with --transport wal and --metrics.
conns() { psql_src -c "SELECT application_name FROM pg_stat_activity WHERE application_name ~ '^(once-relay )?w4( |$)' ORDER BY 1" | tr '\n' ','; }
want_conns="once-relay w4,once-relay w4,once-relay w4,once-relay w4,once-relay w4,w4 wal,w4 wal write-back,"
all_conns() { [ "$(conns)" = "$want_conns" ]; }
once_wait_for "the relay's 7 connections" 30 all_conns || fail "connections: $(conns), want $want_conns"
[ "$(metric once_wal_unauthentic_total)" = 2 ] || fail "once_wal_unauthentic_total is $(metric once_wal_unauthentic_total), want 2"
stop_relay w4
[ "$(jq -r .id "$T/relay-w4.out" | tr '\n' ' ')" = "00000000-0000-0000-0000-000000000001 00000000-0000-0000-0000-000000000005 " ] ||
    fail "delivered: $(jq -r .id "$T/relay-w4.out" | tr '\n' ' ') (want 1 and 5 only)"
[ "$(grep -c "its tag does not verify" "$T/relay-w4.log")" = 2 ] || fail "the two forged messages were not each logged once"
grep -q '"n": 2\|"n":2' "$T/relay-w4.log" && fail "a forged message's payload was logged"
relay_log_has w4 "authenticated by their tag" || fail "the relay did not say it checks tags"

relay_cmd --db "$SRC_DB" --drop-wal-slot >/dev/null || fail "--drop-wal-slot at the end"
say "relay_wal: OK"
