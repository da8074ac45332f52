#!/usr/bin/env bash
# Inbound relay (once-relay --source): database src once.send -> outbound relay -> JetStream
# -> inbound relay -> handler in database dst, exactly once and in order per key; a kill -9
# of the inbound relay mid-stream loses nothing and runs nothing twice; a second publish of a
# message (same id, stored again by the stream) is answered duplicate; a poison message is
# kept in dst's inbox without blocking other keys, and once.inbox_retry runs it from there.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${INBOUND_TEST_N:-2000}

start_postgres
start_nats
MPORT=$(free_port)
metric() { curl -sf "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
metric_at_least() { local v; v=$(metric "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }
received() { psql_dst -c "SELECT count(*) FROM relay_received"; }
received_distinct_at_least() { [ "$(psql_dst -c 'SELECT count(DISTINCT id) FROM relay_received')" -ge "$1" ]; }
order_violations() {
    psql_dst -c "SELECT count(*) FROM (SELECT key, (payload->>'n')::int AS n,
                   lag((payload->>'n')::int) OVER (PARTITION BY key ORDER BY n) AS prev FROM relay_received
                   WHERE key IS NOT NULL) x WHERE prev > x.n"
}
SOURCE_URI="nats://127.0.0.1:$NATS_PORT?stream=ONCE&consumer=dst&filter=once.>&ack_wait=3s"

say "start-up errors"
rc=0; out=$(as_relay_user "$RELAY_BIN" --db "dbname=dst host=$PGHOST" --source "nats://127.0.0.1:$NATS_PORT?stream=ONCE" 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q "consumer=NAME" <<<"$out" || fail "missing consumer=: rc=$rc $out"
rc=0; out=$(as_relay_user "$RELAY_BIN" --db "dbname=dst host=$PGHOST" --source "$SOURCE_URI" --sink stdout: 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q "choose one" <<<"$out" || fail "--source with --sink: rc=$rc $out"
rc=0; out=$(as_relay_user "$RELAY_BIN" --db "dbname=dst host=$PGHOST" --source "nats://127.0.0.1:$NATS_PORT?stream=NOPE&consumer=x" 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q 'stream "NOPE" does not exist' <<<"$out" || fail "missing stream: rc=$rc $out"

say "outbound relay src -> JetStream ONCE; inbound relay ONCE -> dst"
start_relay out --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=ONCE&subject_prefix=once.&create_stream=1" \
    --batch 200 --poll-interval 200ms
once_wait_for "stream ONCE" 30 curl -sf "http://127.0.0.1:$NATS_MON/jsz?streams=1" -o /dev/null
once_wait_for "stream ONCE created" 30 bash -c "grep -q 'stream ONCE' '$T/relay-out.log'"
psql_dst >/dev/null <<'SQL'
SELECT once.inbox_configure('ONCE', max_attempts => 3);
CREATE TABLE poison_switch (fail boolean NOT NULL);
INSERT INTO poison_switch VALUES (true);
CREATE FUNCTION public.picky(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT fail FROM public.poison_switch) THEN
    RAISE EXCEPTION 'picky handler refuses %', msg.message_id;
  END IF;
END $$;
SELECT once.subscribe('picky.>', 'public.picky(once.inbound)'::regprocedure);
SQL
# A check changes nothing: the missing consumer is reported, not created.
consumers() { curl -sf "http://127.0.0.1:$NATS_MON/jsz?consumers=1" | jq '[.account_details[]?.stream_detail[]?.consumer_detail[]?] | length'; }
out=$(as_relay_user "$RELAY_BIN" --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" --source "$SOURCE_URI" --check-config 2>&1) ||
    fail "--check-config with --source: $out"
grep -q "configuration OK (inbound" <<<"$out" || fail "--check-config with --source: $out"
grep -q 'consumer ".*" of stream .* does not exist; once-relay will create it at start' <<<"$out" ||
    fail "--check-config did not report the missing consumer: $out"
[ "$(consumers)" = 0 ] || fail "--check-config created a consumer ($(consumers))"
start_relay in --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" --source "$SOURCE_URI" --metrics "127.0.0.1:$MPORT"
once_wait_for "inbound relay metrics" 30 metric_at_least once_inbound_delivered_total 0 || fail "no inbound metrics"
[ "$(consumers)" = 1 ] || fail "the relay did not create its consumer ($(consumers))"

say "$N messages over 40 keys: each handled once, in order per key"
send_messages "$N" 40
once_wait_for "all $N at dst" 120 received_distinct_at_least "$N" || fail "dst has $(received) of $N"
[ "$(received)" = "$N" ] || fail "dst ran the handler $(received) times for $N messages"
[ "$(order_violations)" = 0 ] || fail "per-key order broken: $(order_violations) inversions"
metric_at_least once_inbound_delivered_total "$N" || fail "once_inbound_delivered_total $(metric once_inbound_delivered_total)"
[ "$(metric once_inbound_consumer_pending)" -ge 0 ] || fail "consumer lag metric missing"

say "kill -9 of the inbound relay mid-stream, restart: nothing lost, nothing twice, order kept"
send_messages "$N" 40 $((N + 1))
once_wait_for "the second batch started" 60 received_distinct_at_least $((N + 50)) || fail "second batch did not start"
kill9_relay in
got=$(received)
start_relay in --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" --source "$SOURCE_URI" --metrics "127.0.0.1:$MPORT"
once_wait_for "all $((2 * N)) at dst" 120 received_distinct_at_least $((2 * N)) || fail "dst has $(received) of $((2 * N))"
[ "$(received)" = $((2 * N)) ] || fail "dst ran the handler $(received) times for $((2 * N)) messages"
[ "$(order_violations)" = 0 ] || fail "per-key order broken after the kill: $(order_violations) inversions"
say "killed at $got of $((2 * N)); after the restart: all $((2 * N)), once each"

say "the same message published again (another Nats-Msg-Id spelling of its id): processed once"
id=$(psql_dst -c "SELECT id FROM relay_received ORDER BY n LIMIT 1")
dup_before=$(metric once_inbound_duplicates_total)
python3 "$RELAY_LIB/nats_publish.py" "$NATS_PORT" once.t.a '{"n": 0, "again": true}' "Nats-Msg-Id=${id^^}" Once-Topic=t.a >/dev/null ||
    fail "second publish"
once_wait_for "the duplicate answered" 30 metric_at_least once_inbound_duplicates_total $((dup_before + 1)) || fail "no duplicate counted"
[ "$(received)" = $((2 * N)) ] || fail "the second publish ran the handler again"

say "a poison message: kept in dst's inbox, other keys go on"
psql_src -c "SELECT once.send('picky.order', '{\"what\": \"refused\"}', 'k-picky')" >/dev/null
once_wait_for "poison counted" 60 metric_at_least once_inbound_poison_total 1 || fail "no poison: $(tail -5 "$T/relay-in.log")"
[ "$(psql_dst -c "SELECT count(*) FROM once.inbox_poison WHERE source = 'ONCE'")" = 1 ] || fail "no poison row in dst"
send_messages 200 40 $((2 * N + 1))
once_wait_for "messages after the poison" 60 received_distinct_at_least $((2 * N + 200)) || fail "stream blocked after poison"
[ "$(received)" = $((2 * N + 200)) ] || fail "duplicates after poison"
relay_log_has in "is poison in the inbox" || fail "poison not logged"

say "the handler fixed, once.inbox_retry runs the poison message from dst's stored copy"
pid=$(psql_dst -c "SELECT message_id FROM once.inbox_poison WHERE source = 'ONCE'")
[ "$(psql_dst -c "SELECT topic || ' ' || (payload->>'what') || ' ' || has_copy FROM once.inbox_poison WHERE message_id = '$pid'")" = "picky.order refused true" ] ||
    fail "poison row without its topic and copy: $(psql_dst -c "SELECT * FROM once.inbox_poison")"
psql_dst -c "UPDATE poison_switch SET fail = false"
[ "$(psql_dst -c "SELECT once.inbox_retry('ONCE', '$pid')")" = t ] || fail "inbox_retry"
[ "$(psql_dst -c "SELECT count(*) FROM relay_received WHERE id = '$pid' AND topic = 'picky.order' AND payload->>'what' = 'refused'")" = 1 ] ||
    fail "inbox_retry did not run the handlers from the copy"
[ "$(psql_dst -c "SELECT count(*) FROM once.inbox_poison")" = 0 ] || fail "still poison after the retry"

stop_relay in; [ "$RELAY_RC" = 0 ] || fail "inbound relay exit code $RELAY_RC"
stop_relay out; [ "$RELAY_RC" = 0 ] || fail "outbound relay exit code $RELAY_RC"
say "relay_inbound_nats: OK"
