#!/usr/bin/env bash
# A prepared transaction holding a key does not hold the WAL stream. A stream
# message X of key K is committed; then a transaction sends on K and runs PREPARE TRANSACTION
# (its message is a row, and it keeps K's lock bucket until COMMIT PREPARED). The relay starts;
# the receiver refuses X's first delivery, so the relay writes X back, which needs K's lock
# bucket. On the first 0.3 builds that write-back failed with ON216 every second, and the
# stream's batches waited behind it. Now:
#  - the write-back passes over a bucket a prepared transaction holds: X is in the table (with
#    its earlier key_seq) before COMMIT PREPARED, and nothing is logged as failing;
#  - the relay keeps publishing other messages one by one (each needs a new batch) and keeps
#    sending status updates;
#  - after COMMIT PREPARED, X and then the prepared transaction's message are delivered.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical max_prepared_transactions=2 shared_preload_libraries=pg_once
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"

x=$(psql_src -c "SELECT once.send('p.k', '{\"n\": \"x\"}', key => 'K')")
[ "$(psql_src -c "SELECT count(*) FROM once.outbox")" = 0 ] || fail "X is a row: not a stream message"
p=$(psql -X -q -v ON_ERROR_STOP=1 -At -d src <<'SQL'
BEGIN;
SELECT once.send('p.k', '{"n": "prepared"}', key => 'K');
PREPARE TRANSACTION 'held-K';
SQL
)
[ "$(psql_src -c "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'held-K'")" = 1 ] || fail "no prepared transaction"
say "X ($x) on the stream; transaction held-K prepared with a message of K ($p)"

start_http_receiver r --fail-first 1 --fail-topic p.k   # X's first delivery is refused
mport=$(free_port)
start_relay w --db "$SRC_DB" --sink "$HTTP_URL" --transport wal --poll-interval 100ms --maintenance off \
    --metrics "127.0.0.1:$mport"
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
status_of() { jq -r --arg id "$1" --arg s "$2" 'select(.id == $id and .status == ($s | tonumber)) | .id' "$HTTP_LOG" | wc -l; }
refused() { [ "$(status_of "$x" 503)" -ge 1 ]; }
delivered() { [ "$(status_of "$1" 200)" -ge 1 ]; }
x_in_table() { [ "$(psql_src -c "SELECT count(*) FROM once.outbox WHERE id = '$x'")" = 1 ]; }
once_wait_for "X refused once" 30 refused || fail "X was not offered to the receiver"
once_wait_for "X written back while held-K is prepared" 10 x_in_table ||
    fail "X is not in the table: $(grep -E 'warning|error' "$T/relay-w.log" | tail -3)"

say "the relay goes on: three messages, each sent after the one before was delivered"
for i in 1 2 3; do
    u=$(psql_src -c "SELECT once.send('p.u', jsonb_build_object('i', $i))")
    once_wait_for "message $i delivered" 20 delivered "$u" || fail "message $i not delivered while held-K is prepared"
done
wal_pid=$(psql_src -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'once_relay'")
t0=$(psql_src -c "SELECT reply_time FROM pg_stat_replication WHERE pid = $wal_pid")
replied_since() { [ "$(psql_src -c "SELECT reply_time > '$t0' FROM pg_stat_replication WHERE pid = $wal_pid")" = t ]; }
once_wait_for "a later status update from the relay" 30 replied_since || fail "no status update since $t0"
! delivered "$x" || fail "X was delivered while held-K, which holds its key, is prepared"
! delivered "$p" || fail "held-K's message was delivered before COMMIT PREPARED"
[ "$(metric once_wal_write_backs_waiting)" = 0 ] || fail "once_wal_write_backs_waiting $(metric once_wal_write_backs_waiting)"
! grep -Eq "ON216|writing back .* failed|waits for its key's lock" "$T/relay-w.log" ||
    fail "the write-back failed or waited: $(grep -E "ON216|failed|waits" "$T/relay-w.log" | head -3)"

psql_src -c "COMMIT PREPARED 'held-K'" >/dev/null
say "COMMIT PREPARED: X, then held-K's message"
once_wait_for "X and held-K's message delivered" 30 delivered "$p" || fail "held-K's message not delivered; outbox: $(outbox_left)"
delivered "$x" || fail "held-K's message was delivered, X was not"
[ "$(jq -r 'select(.status == 200 and .topic == "p.k") | .id' "$HTTP_LOG" | tr '\n' ' ')" = "$x $p " ] ||
    fail "K delivered out of order: $(jq -r 'select(.topic == "p.k") | "\(.id) \(.status)"' "$HTTP_LOG" | tr '\n' ';'), want $x then $p"
once_wait_for "the table drained" 30 outbox_empty || fail "outbox still has $(outbox_left)"
[ "$(metric once_wal_written_back_total)" -ge 1 ] || fail "once_wal_written_back_total $(metric once_wal_written_back_total)"
stop_relay w
[ "$RELAY_RC" = 0 ] || fail "relay w exited $RELAY_RC"
say "relay_wal_prepared_key: OK"
