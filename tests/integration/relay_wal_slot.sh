#!/usr/bin/env bash
# The WAL transport's slot, honestly (docs/relay-operations.md, "Retention", "An invalidated or missing slot" and "Alerts"):
#  * once_wal_slot_lag_seconds is the age of the oldest unconfirmed commit while the sink
#    holds a message, and 0 once it is acknowledged;
#  * a slot PostgreSQL invalidated (max_slot_wal_keep_size passed while the relay was down):
#    the relay logs it once with the command to recreate it, once_wal_slot_invalidated is 1,
#    /healthz fails, the slot is not recreated, and the table claims go on;
#  * a missing slot at start is the same state; once the operator creates the slot, the relay
#    streams it without a restart;
#  * a slot invalidated while the relay streams it (PostgreSQL ends the walsender): the
#    reopen finds it, with the same log line, gauge and /healthz.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical
relay_cmd() { "${RELAY_AS[@]}" "$RELAY_BIN" "$@"; }
relay_cmd --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"
mport=$(free_port)
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
metric_at_least() { local v; v=$(metric "$1"); [ -n "$v" ] && awk -v v="$v" -v m="$2" 'BEGIN { exit !(v >= m) }'; }
healthz() { curl -sS -o "$T/healthz.txt" -w '%{http_code}' "http://127.0.0.1:$mport/healthz" 2>/dev/null; }
healthz_is() { [ "$(healthz)" = "$1" ]; }
slot_row() { psql_src -c "SELECT count(*), string_agg(coalesce(wal_status, 'NULL'), ',') FROM pg_replication_slots"; }

say "lag in seconds: a message the sink holds"
touch "$T/hold"; chmod 666 "$T/hold"
start_http_receiver h --hold-while "$T/hold"
start_relay a --db "$SRC_DB" --sink "$HTTP_URL" --transport wal --sink-timeout 60s --poll-interval 100ms \
    --metrics "127.0.0.1:$mport"
once_wait_for "the stream open" 30 relay_log_has a "WAL stream open" || fail "relay a did not open the stream"
once_wait_for "once_wal_slot_lag_seconds 0" 30 metric_is once_wal_slot_lag_seconds 0 || fail "no once_wal_slot_lag_seconds 0 while idle"
metric_is once_wal_slot_invalidated 0 || fail "once_wal_slot_invalidated is $(metric once_wal_slot_invalidated) on a healthy slot"
healthz_is 200 || fail "/healthz $(healthz) on a healthy relay: $(cat "$T/healthz.txt")"
grep -q "wal slot usable" "$T/healthz.txt" || fail "/healthz does not report the slot: $(cat "$T/healthz.txt")"
psql_src -c "SELECT once.send('t.lag', '{\"n\": 1}')" >/dev/null
once_wait_for "once_wal_slot_lag_seconds >= 2" 30 metric_at_least once_wal_slot_lag_seconds 2 ||
    fail "once_wal_slot_lag_seconds stayed at $(metric once_wal_slot_lag_seconds) while the sink held the message"
rm -f "$T/hold"
once_wait_for "the held message delivered" 30 http_has "$HTTP_LOG" 1 || fail "the held message was not delivered"
once_wait_for "once_wal_slot_lag_seconds back to 0" 30 metric_is once_wal_slot_lag_seconds 0 ||
    fail "once_wal_slot_lag_seconds is $(metric once_wal_slot_lag_seconds) after the acknowledgement"
stop_relay a
[ "$RELAY_RC" = 0 ] || fail "relay a exited $RELAY_RC"
say "lag rose to >= 2 s while held, 0 after the acknowledgement"

say "the slot invalidated while the relay is down (max_slot_wal_keep_size = 1MB)"
psql_src -c "SELECT count(once.send('t.lost', jsonb_build_object('n', g))) FROM generate_series(1, 3) g" >/dev/null
psql -X -q -d postgres -c "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'" -c "SELECT pg_reload_conf()" >/dev/null
wal_round() {   # more WAL, a new segment, a checkpoint (which invalidates); then: lost yet?
    psql -X -q -d postgres -c "SELECT pg_logical_emit_message(false, 'filler', repeat('x', 4096))" \
        -c "SELECT pg_switch_wal()" -c "CHECKPOINT" >/dev/null
    [ "$(psql_src -c "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = lost ]
}
once_wait_for "wal_status = 'lost'" 60 wal_round || fail "the slot was not invalidated: $(slot_row)"
say "pg_replication_slots: $(slot_row)"
RELAY_LOG_LEVEL=debug start_relay b --db "$SRC_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
once_wait_for "the invalidation logged" 30 relay_log_has b "invalidated the replication slot once_relay" ||
    fail "relay b did not log the invalidation"
grep "invalidated the replication slot" "$T/relay-b.log" | grep -q "error" || fail "the invalidation is not logged as an error"
grep "invalidated the replication slot" "$T/relay-b.log" | grep -q -- "--drop-wal-slot && once-relay .*--create-wal-slot" ||
    fail "the log line does not say how to recreate the slot: $(grep invalidated "$T/relay-b.log")"
once_wait_for "once_wal_slot_invalidated 1" 30 metric_is once_wal_slot_invalidated 1 ||
    fail "once_wal_slot_invalidated is $(metric once_wal_slot_invalidated)"
healthz_is 503 || fail "/healthz answers $(healthz) with an invalidated slot"
grep -q "wal slot invalidated" "$T/healthz.txt" || fail "/healthz does not say why: $(cat "$T/healthz.txt")"
# The table claims go on: a keyed message (always in the table) is delivered.
psql_src -c "SELECT once.send('t.keyed', '{\"k\": 1}', key => 'k1')" >/dev/null
keyed_out() { grep -q t.keyed "$T/relay-b.out"; }
once_wait_for "the keyed message through the table" 30 keyed_out || fail "relay b stopped serving the table"
[ "$(slot_row)" = "1|lost" ] || fail "the slot was recreated or dropped: $(slot_row)"
grep -q t.lost "$T/relay-b.out" && fail "a message from the removed WAL was delivered"
# Looked at again after WalStream::kSlotRecheck (10 s, a debug line): still one error line.
once_wait_for "a recheck of the slot" 30 relay_log_has b "WAL stream still closed" || fail "relay b did not look at the slot again"
[ "$(grep -c "WAL stream closed" "$T/relay-b.log")" = 1 ] || fail "the invalidation was logged $(grep -c "WAL stream closed" "$T/relay-b.log") times"
[ "$(slot_row)" = "1|lost" ] || fail "the slot was recreated after a recheck: $(slot_row)"
stop_relay b
[ "$RELAY_RC" = 0 ] || fail "relay b exited $RELAY_RC"
say "invalidated: logged once as an error with the command, metric 1, /healthz 503, not recreated, table served"

say "a missing slot at start is the same state; creating it resumes the stream"
relay_cmd --db "$SRC_DB" --drop-wal-slot >/dev/null || fail "--drop-wal-slot"
start_relay c --db "$SRC_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
once_wait_for "the missing slot logged" 30 relay_log_has c "replication slot once_relay does not exist" ||
    fail "relay c did not log the missing slot"
once_wait_for "once_wal_slot_invalidated 1" 30 metric_is once_wal_slot_invalidated 1 || fail "no metric for a missing slot"
healthz_is 503 || fail "/healthz answers $(healthz) without a slot"
[ "$(slot_row)" = "0|" ] || fail "the relay created a slot by itself: $(slot_row)"
relay_cmd --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql_src -c "SELECT once.send('t.after', '{\"n\": 2}')" >/dev/null
after_out() { grep -q t.after "$T/relay-c.out"; }
once_wait_for "a message in the new slot delivered" 40 after_out || fail "relay c did not stream the recreated slot"
healthz_is 200 || fail "/healthz answers $(healthz) after the slot was created"
metric_is once_wal_slot_invalidated 0 || fail "once_wal_slot_invalidated stayed $(metric once_wal_slot_invalidated)"
relay_log_has c "usable again" || fail "relay c did not say the slot is usable again"
stop_relay c
[ "$RELAY_RC" = 0 ] || fail "relay c exited $RELAY_RC"
say "created again: streamed without a restart, /healthz 200"

say "the slot invalidated while the relay streams it (the sink holds a message, so it cannot confirm)"
touch "$T/hold"
start_relay d --db "$SRC_DB" --sink "$HTTP_URL" --transport wal --sink-timeout 60s --poll-interval 100ms \
    --metrics "127.0.0.1:$mport"
once_wait_for "the stream open" 30 relay_log_has d "WAL stream open" || fail "relay d did not open the stream"
psql_src -c "SELECT once.send('t.held', '{\"n\": 3}')" >/dev/null
once_wait_for "the message held (lag >= 1 s)" 30 metric_at_least once_wal_slot_lag_seconds 1 || fail "the message was not held"
once_wait_for "wal_status = 'lost' under an active relay" 60 wal_round || fail "the active slot was not invalidated: $(slot_row)"
once_wait_for "the invalidation logged by the running relay" 30 relay_log_has d "invalidated the replication slot once_relay" ||
    fail "relay d did not log the invalidation"
once_wait_for "once_wal_slot_invalidated 1" 30 metric_is once_wal_slot_invalidated 1 ||
    fail "once_wal_slot_invalidated is $(metric once_wal_slot_invalidated) after an invalidation while streaming"
healthz_is 503 || fail "/healthz answers $(healthz) after an invalidation while streaming"
[ "$(slot_row)" = "1|lost" ] || fail "the slot was recreated: $(slot_row)"
rm -f "$T/hold"
stop_relay d
[ "$RELAY_RC" = 0 ] || fail "relay d exited $RELAY_RC"
say "invalidated while streaming: the reopen found it (log, metric, /healthz 503), nothing recreated"
relay_cmd --db "$SRC_DB" --drop-wal-slot >/dev/null || fail "--drop-wal-slot at the end"
say "relay_wal_slot: OK"
