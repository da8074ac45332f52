#!/usr/bin/env bash
# Keyed messages and sagas on the WAL transport, end to end, with
# pg_once preloaded (keyed messages need its shared memory) and once.transport = 'wal':
#  * a saga's commands and replies (keyed by saga id) ride the stream: a CHECK constraint makes
#    any command or reply row fail its producer, and every saga still completes;
#  * N producers send keyed messages for a few keys each; the HTTP receiver refuses the first
#    delivery of about one message in four (503): the relay writes those back (fenced) and the
#    key's later stream messages behind them, and every message is delivered exactly once, in
#    per-key send order.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
SAGAS=${WAL_KEYED_SAGAS:-3}
PRODUCERS=${WAL_KEYED_PRODUCERS:-4}
PER=${WAL_KEYED_PER_PRODUCER:-150}   # transactions per producer
KEYS=${WAL_KEYED_KEYS:-3}            # keys per producer

start_postgres fsync=off wal_level=logical shared_preload_libraries=pg_once
SRC_URI="postgresql://postgres@/src?host=$PGHOST&port=$PGPORT"
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"

say "sagas: commands and replies through the WAL"
psql_src >/dev/null <<'SQL'
SELECT once.saga_define('walsaga', '{"steps": [
    {"name": "a", "action": {"topic": "cmd.a"}, "timeout": "1 minute"},
    {"name": "b", "action": {"topic": "cmd.b"}, "timeout": "1 minute"},
    {"name": "c", "action": {"topic": "cmd.c"}, "timeout": "1 minute"}],
  "reply_to": "saga.walsaga.reply"}');
CREATE FUNCTION public.service(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT once.send(msg.headers ->> 'reply_to',
                     jsonb_build_object('saga_id', msg.payload ->> 'saga_id', 'step', msg.payload ->> 'step',
                                        'outcome', 'succeeded'),
                     key => msg.payload ->> 'saga_id') $$;
SELECT once.subscribe('cmd.>', 'public.service(once.inbound)');
SELECT once.subscribe('saga.walsaga.reply', 'once.saga_reply_handler(once.inbound)');
-- A command or reply that became a row would fail its producer: the saga could not complete.
ALTER TABLE once.outbox ADD CONSTRAINT test_no_saga_rows CHECK (topic NOT LIKE 'cmd.%' AND topic NOT LIKE 'saga.%');
SQL
start_relay s --db "$SRC_DB" --sink "$SRC_URI" --transport wal --poll-interval 10s --maintenance off
for ((i = 1; i <= SAGAS; i++)); do
    psql_src -c "SELECT once.saga_start('walsaga', 'ws-$i')" >/dev/null
done
all_completed() { [ "$(psql_src -c "SELECT count(*) FROM once.sagas WHERE saga_id LIKE 'ws-%' AND status = 'completed'")" = "$SAGAS" ]; }
once_wait_for "$SAGAS sagas to complete" 60 all_completed ||
    fail "sagas: $(psql_src -c "SELECT string_agg(saga_id || ' ' || status, ', ') FROM once.sagas")"
[ "$(psql_src -c "SELECT count(*) FROM once.outbox")" = 0 ] || fail "the outbox holds rows"
[ "$(psql_src -c "SELECT count(*) FROM once.inbox WHERE topic LIKE 'cmd.%'")" = $((3 * SAGAS)) ] ||
    fail "the services got $(psql_src -c "SELECT count(*) FROM once.inbox WHERE topic LIKE 'cmd.%'") commands, want $((3 * SAGAS))"
stop_relay s
[ "$RELAY_RC" = 0 ] || fail "relay s exited $RELAY_RC"
psql_src -c "ALTER TABLE once.outbox DROP CONSTRAINT test_no_saga_rows" >/dev/null
say "$SAGAS 3-step sagas completed; no command or reply was a row"

say "$PRODUCERS producers x $PER transactions over $((PRODUCERS * KEYS)) keys; the receiver refuses 1 in 4 once"
psql_src -c "SELECT once.topic_policy('t.k', 25, '20 milliseconds', '200 milliseconds')" >/dev/null
start_http_receiver k --fail-one-in 4
mport=$(free_port)
start_relay h --db "$SRC_DB" --sink "$HTTP_URL" --transport wal --poll-interval 100ms --maintenance off \
    --metrics "127.0.0.1:$mport"
producer() {
    local p=$1 i k
    for ((i = 1; i <= PER; i++)); do
        k=$((i % KEYS))
        echo "BEGIN;"
        echo "SELECT once.send('t.k', jsonb_build_object('p', $p, 'i', $i), key => 'p$p-k$k')::text || ' p$p-k$k';"
        if ((i % 5 == 0)); then   # a second message of the key in the same transaction
            echo "SELECT once.send('t.k', jsonb_build_object('p', $p, 'i', $i, 'second', true), key => 'p$p-k$k')::text || ' p$p-k$k';"
        fi
        echo "COMMIT;"
    done | psql_src >"$T/sent-$p.txt"
}
pids=()
for ((p = 1; p <= PRODUCERS; p++)); do producer "$p" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid" || fail "a producer failed"; done
cat "$T"/sent-*.txt >"$T/sent.txt"
total=$(wc -l <"$T/sent.txt")
[ "$total" = $((PRODUCERS * (PER + PER / 5))) ] || fail "producers sent $total"
once_wait_for "all $total delivered" 180 http_has "$HTTP_LOG" "$total" ||
    fail "delivered $(http_count "$HTTP_LOG") of $total; outbox: $(outbox_left)"
once_wait_for "the table drained" 30 outbox_empty || fail "outbox still has $(outbox_left)"
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
written_back=$(metric once_wal_written_back_total)
stop_relay h
[ "$RELAY_RC" = 0 ] || fail "relay h exited $RELAY_RC"

# Exactly once: each id answered 200 once. Per-key order: for each key, the ids answered 200,
# in the receiver's order, are the ids in the order their producer sent them.
[ "$(jq -r 'select(.status == 200) | .id' "$HTTP_LOG" | sort | uniq -d | wc -l)" = 0 ] || fail "an id was delivered twice"
refused=$(jq -r 'select(.status == 503) | .id' "$HTTP_LOG" | sort -u | wc -l)
[ "$refused" -gt 0 ] || fail "the receiver refused nothing: no write-back tested"
violations=0
for key in $(awk '{print $2}' "$T/sent.txt" | sort -u); do
    diff -q <(awk -v k="$key" '$2 == k {print $1}' "$T/sent.txt") \
        <(jq -r --arg k "$key" 'select(.status == 200 and .key == $k) | .id' "$HTTP_LOG") >/dev/null ||
        { violations=$((violations + 1)); say "key $key out of order"; }
done
[ "$violations" = 0 ] || fail "$violations key(s) delivered out of order"
[ "$(psql_src -c "SELECT count(*) FROM once.blocked_keys")" = 0 ] || fail "keys are blocked: $(psql_src -c "TABLE once.blocked_keys")"
say "delivered $total exactly once in per-key order; $refused refused once, $written_back written back (with the keys' later stream messages)"
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --drop-wal-slot >/dev/null || fail "--drop-wal-slot"
say "relay_wal_keyed: OK"
