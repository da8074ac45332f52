#!/usr/bin/env bash
# once-relay's HTTP sink: 503 then 200 -> delivered after the Retry-After wait; 400 -> dead
# letter with the status and body as the reason; a receiver slower than the lease -> the lease
# is extended and nothing is delivered twice.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-300}

start_postgres

say "503 then 200, Retry-After: 1"
start_http_receiver flaky --fail-first 1 --fail-status 503 --retry-after 1
FLAKY_URL=$HTTP_URL FLAKY_LOG=$HTTP_LOG
send_messages "$N" 0
start_relay flaky --db "$SRC_DB" --sink "$FLAKY_URL" --batch 100 --max-in-flight 16 --poll-interval 100ms
once_wait_for "all $N delivered after a 503" 60 http_has "$FLAKY_LOG" "$N" || fail "$(http_count "$FLAKY_LOG") delivered"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
stop_relay flaky
[ "$(http_count "$FLAKY_LOG" 503)" = "$N" ] || fail "expected one 503 per message"
# Retry-After honoured: the 200 comes at least ~1s after the 503 for every message.
early=$(jq -s 'group_by(.id) | map(select(length == 2) | (map(select(.status == 200))[0].t - map(select(.status == 503))[0].t)) | map(select(. < 0.9)) | length' "$FLAKY_LOG")
[ "$early" = 0 ] || fail "$early messages retried before Retry-After"
relay_log_has flaky "HTTP 503: try later" || fail "503 not logged with the reason"

say "400 -> dead letter"
start_http_receiver dead --dead-topic t.dead
psql_src -c "SELECT once.topic_policy('t.dead', max_attempts => 1)" >/dev/null
DEAD_ID=$(psql_src -c "SELECT once.send('t.dead', '{\"order\": 1}', 'dead-key')")
psql_src -c "SELECT once.send('t.ok', '{\"order\": 2}')" >/dev/null
start_relay dead --db "$SRC_DB" --sink "$HTTP_URL" --poll-interval 100ms
once_wait_for "dead letter" 30 bash -c "[ -n \"\$(psql -X -At -d src -c \"SELECT 1 FROM once.dead_letters WHERE id = '$DEAD_ID' AND last_error LIKE '%HTTP 400: bad order: missing customer%'\")\" ]" ||
    fail "no dead letter: $(psql_src -c "SELECT attempt, last_error FROM once.outbox WHERE id = '$DEAD_ID'")"
once_wait_for "the other message delivered" 30 http_has "$HTTP_LOG" 1 || fail "t.ok not delivered"
relay_log_has dead "$DEAD_ID" || fail "dead letter not logged with its id"
stop_relay dead

say "slow receiver (3s) with a 2s lease: extended, not delivered twice"
start_http_receiver slow --delay-ms 3000
send_messages 20 0 5001
RELAY_LOG_LEVEL=debug start_relay slow --db "$SRC_DB" --sink "$HTTP_URL" --lease 2s --sink-timeout 10s --poll-interval 100ms
RELAY_LOG_LEVEL=debug start_relay slow2 --db "$SRC_DB" --sink "$HTTP_URL" --lease 2s --sink-timeout 10s --poll-interval 100ms
once_wait_for "20 slow deliveries" 60 http_has "$HTTP_LOG" 20 || fail "$(http_count "$HTTP_LOG") delivered"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
stop_relay slow; stop_relay slow2
total=$(jq -r .id "$HTTP_LOG" | wc -l)
[ "$total" = 20 ] || fail "slow receiver got $total requests for 20 messages (double delivery)"
relay_log_has slow "extended the lease" || relay_log_has slow2 "extended the lease" || fail "lease never extended"
say "relay_http: OK"
