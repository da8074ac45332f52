#!/usr/bin/env bash
# A prepared transaction does not stall the relays. A producer sends on key
# K and runs PREPARE TRANSACTION: it keeps K's order lock until COMMIT PREPARED. Relay A, in
# --claim-mode locked, has K's head in its open batch at that moment (its HTTP receiver holds
# the requests until the test lets them go). On 0.2 A's COMMIT then waited for the prepared
# transaction for ever, and the whole batch with it. Now:
#  - A's COMMIT fails at once with ON216, naming the key and the prepared transaction, and A
#    gives the batch back;
#  - A claims on and delivers every other key's messages while the transaction stays prepared
#    (claims skip the keys whose lock bucket a prepared transaction holds);
#  - once.blocked_keys shows K with reason 'prepared' and the transaction's gid;
#  - after COMMIT PREPARED, K's messages are delivered in order.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N_OTHER=300

start_postgres max_prepared_transactions=4 shared_preload_libraries=pg_once   # (preloaded: a sending transaction may PREPARE, it NOTIFYs nothing itself)
psql_src -c "SELECT once.send('t.a', '{\"n\": \"head\"}', key => 'K')" >/dev/null
psql_src -c "SELECT count(once.send('t.a', jsonb_build_object('n', g), key => 'k' || g)) FROM generate_series(1, $N_OTHER) g" >/dev/null
k_bucket=$(psql_src -c "SELECT once._outbox_key_bucket('K')")

touch "$T/hold"; chmod 666 "$T/hold"
start_http_receiver A --hold-while "$T/hold"
start_relay A --db "$SRC_DB" --sink "$HTTP_URL" --claim-mode locked --batch 1000 --maintenance off
a_holds_batch() {
    [ "$(psql_src -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'once-relay A'
                       AND state LIKE 'idle in transaction%'")" -ge 1 ]
}
once_wait_for "relay A to hold a locked batch (its receiver answers nothing yet)" 30 a_holds_batch ||
    fail "relay A never opened a batch"
# Is K's head in A's batch? Rows A's transaction deleted are locked to everyone else.
k_free=$(psql_src -c "SELECT count(*) FROM (SELECT 1 FROM once.outbox WHERE key = 'K' FOR UPDATE SKIP LOCKED) f")
[ "$k_free" = 0 ] || fail "K's head is not in relay A's batch"

psql -X -q -v ON_ERROR_STOP=1 -d src <<'SQL'
BEGIN;
SELECT once.send('t.a', '{"n": "prepared"}', key => 'K');
PREPARE TRANSACTION 'stuck-K';
SQL
say "transaction stuck-K prepared with a message of key K (lock bucket $k_bucket); releasing the receiver"
rm -f "$T/hold"

once_wait_for "relay A to say which key and which prepared transaction stopped its commit" 30 \
    relay_log_has A 'key "K" is held by prepared transaction "stuck-K"' ||
    fail "relay A did not log the prepared transaction (its commit may be waiting for it)"
relay_log_has A 'ON216' || fail "relay A's log lacks the SQLSTATE ON216"
say "ok - relay A's commit failed at once with ON216 naming K and stuck-K; the batch was given back"

# Everything but the keys of K's lock bucket is delivered while stuck-K stays prepared.
others_left() {
    psql_src -c "SELECT count(*) FROM once.outbox WHERE once._outbox_key_bucket(key) <> $k_bucket"
}
others_done() { [ "$(others_left)" = 0 ]; }
once_wait_for "relay A to deliver every other key while stuck-K is prepared" 60 others_done ||
    fail "$(others_left) message(s) of other keys still wait: the prepared transaction stalls the relay"
say "ok - every other key's messages were delivered while stuck-K stayed prepared"

row=$(psql_src -c "SELECT reason || ' ' || prepared_gid || ' ' || (held_message_id IS NOT NULL)
                     FROM once.blocked_keys WHERE key = 'K'")
[ "$row" = "prepared stuck-K true" ] || fail "once.blocked_keys shows K as '$row', not as held by stuck-K"
say "ok - once.blocked_keys lists K: reason prepared, gid stuck-K"
[ "$(psql_src -c "SELECT count(*) FROM once.outbox WHERE key = 'K'")" = 1 ] ||
    fail "K's head should still wait in the outbox"

psql_src -c "COMMIT PREPARED 'stuck-K'"
once_wait_for "the outbox to drain after COMMIT PREPARED" 60 outbox_empty ||
    fail "$(outbox_left) message(s) left after COMMIT PREPARED"
order=$(jq -r 'select(.status == 200 and .key == "K") | .payload.n' "$HTTP_LOG" | awk '!seen[$0]++' | paste -sd' ')
[ "$order" = "head prepared" ] || fail "key K arrived as '$order', not 'head prepared'"
got=$(http_count "$HTTP_LOG")
[ "$got" = $((N_OTHER + 2)) ] || fail "the receiver has $got distinct messages, not $((N_OTHER + 2))"
[ "$(psql_src -c "SELECT count(*) FROM once.blocked_keys")" = 0 ] || fail "once.blocked_keys still lists keys"
say "ok - after COMMIT PREPARED key K was delivered in order (head, prepared); $got messages in all"
echo "PASS"
