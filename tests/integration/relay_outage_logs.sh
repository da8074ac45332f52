#!/usr/bin/env bash
# Outages are logged once when they start, with the reason, and once when they end, with how
# long they lasted, how many attempts failed meanwhile and how many messages waited (issue
# 22): a NATS sink stopped and started again, an HTTP receiver stopped while messages keep
# failing and started again, then PostgreSQL stopped (immediate) and started again. The
# failed attempts in between are logged at debug only. Also: the real relay's
# /metrics has the per-topic outbox gauges, and the shipped dashboard and alert rules query
# only metrics it exports (tests/monitoring/check.sh against that output).
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
NATS_PORT=$(restartable_port); NATS_MON=$(restartable_port)
mkdir -p "$T/nats"
NATS_PID=
nats_start() {
    nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$T/nats" >>"$T/nats.log" 2>&1 &
    NATS_PID=$!
    BG_PIDS+=("$NATS_PID")
    once_wait_for "nats-server" 20 curl -sf "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true" || fail "nats-server did not start"
}
nats_stop() {
    kill -TERM "$NATS_PID" 2>/dev/null || true
    once_wait_for "nats-server to exit" 20 bash -c "! kill -0 $NATS_PID 2>/dev/null" || fail "nats-server did not stop"
    wait "$NATS_PID" 2>/dev/null || true
}
LOG=$T/relay-r.log
lines() { grep -c -- "$1" "$LOG" || true; }
log_has() { grep -q -- "$1" "$LOG"; }
log_count_at_least() { [ "$(lines "$1")" -ge "$2" ]; }
metrics() { curl -sf "http://127.0.0.1:$MPORT/metrics"; }
gauges_read() { metrics | grep -Eq '^once_outbox_gauges_timestamp_seconds [1-9]'; }
claimed() { metrics | grep -Eq '^once_relay_last_claim_timestamp_seconds [1-9]'; }
healthz_is() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/healthz")" = "$1" ]; }

# 40 messages due in an hour: the first gauge read shows them as delayed on their topic.
psql_src -c "SELECT count(once.send('t.later', jsonb_build_object('n', g), NULL, NULL, now() + interval '1 hour'))
             FROM generate_series(1, 40) g" >/dev/null
HTTP_PORT=$(restartable_port)
HTTP_PID=
http_start() {
    rm -f "$T/http-h.port"
    start_http_receiver h --port "$HTTP_PORT"
    HTTP_PID=${BG_PIDS[-1]}
}
http_stop() {
    kill -TERM "$HTTP_PID" 2>/dev/null || true
    once_wait_for "HTTP receiver to exit" 20 bash -c "! kill -0 $HTTP_PID 2>/dev/null" || fail "receiver did not stop"
    wait "$HTTP_PID" 2>/dev/null || true
}
HLOG=$T/relay-h.log
hlines() { grep -c -- "$1" "$HLOG" || true; }
hlog_has() { grep -q -- "$1" "$HLOG"; }
hlog_count_at_least() { [ "$(hlines "$1")" -ge "$2" ]; }
h_left() { psql_src -c "SELECT count(*) FROM once.outbox WHERE topic LIKE 'h.%'"; }
h_drained() { [ "$(h_left)" = 0 ]; }

nats_start
http_start
MPORT=$(free_port)
RELAY_LOG_LEVEL=debug start_relay r --db "$SRC_DB" \
    --sink "nats://127.0.0.1:$NATS_PORT?stream=OL&subject_prefix=once.&create_stream=1" \
    --poll-interval 100ms --metrics "127.0.0.1:$MPORT" --reconnect-max 500ms --topics 't.*'
RELAY_LOG_LEVEL=debug start_relay h --db "$SRC_DB" --sink "http://127.0.0.1:$HTTP_PORT/hook" --topics 'h.*' \
    --poll-interval 100ms --reconnect-max 500ms
once_wait_for "the first outbox gauges" 30 gauges_read || fail "no outbox gauges on /metrics"
once_wait_for "the first claim" 30 claimed || fail "no claim timestamp on /metrics"
metrics >"$T/metrics.txt"
grep -qx 'once_outbox_delayed{topic="t.later"} 40' "$T/metrics.txt" ||
    fail "want 40 delayed on t.later: $(grep once_outbox_delayed "$T/metrics.txt")"
grep -Eq '^once_sagas\{status="failed"\} 0$' "$T/metrics.txt" || fail "no saga gauge: $(grep once_sagas "$T/metrics.txt")"
grep -Eq '^once_relay_last_claim_timestamp_seconds [0-9]{10}(\.[0-9]+)?$' "$T/metrics.txt" ||
    fail "claim timestamp not printed in full: $(grep '^once_relay_last_claim' "$T/metrics.txt")"
"$ONCE_SOURCE_DIR/tests/monitoring/check.sh" "$T/metrics.txt" >"$T/monitoring.log" 2>&1 ||
    fail "monitoring files against the relay's /metrics: $(cat "$T/monitoring.log")"
send_messages 200 10
once_wait_for "200 at JetStream" 60 stream_has OL 200 || fail "stream has $(stream_msgs OL) of 200"

say "NATS outage"
nats_stop
once_wait_for "sink down logged" 30 log_has "warning: sink down: " || fail "no \"sink down\" line"
once_wait_for "healthz 503" 10 healthz_is 503 || fail "healthz not 503 while NATS is down"
send_messages 300 10 1001   # they wait in the outbox
nats_start
once_wait_for "sink healed logged" 60 log_has "info: sink healed after" || fail "no \"sink healed\" line"
once_wait_for "500 at JetStream" 60 stream_has OL 500 || fail "stream has $(stream_msgs OL) of 500"
[ "$(lines 'sink down: ')" = 1 ] || fail "\"sink down\" logged $(lines 'sink down: ') times, want once: $(grep 'sink down' "$LOG")"
[ "$(lines 'sink healed')" = 1 ] || fail "\"sink healed\" logged $(lines 'sink healed') times"
healed=$(grep 'sink healed' "$LOG")
say "$healed"
[[ "$healed" =~ sink\ healed\ after\ [0-9]+\.[0-9]\ s\ \(down\ since:\ .+\)\;\ [0-9]+\ attempt\(s\)\ failed\ meanwhile\;\ ([0-9]+)\ message\(s\)\ waiting\ in\ the\ outbox ]] ||
    fail "unexpected healed line: $healed"
[ "${BASH_REMATCH[1]}" -ge 340 ] || fail "healed line says ${BASH_REMATCH[1]} waited, want >= 340 (300 sent meanwhile + 40 delayed)"

say "HTTP outage"
# Retries come back quickly (at most 500 ms), so the relay keeps trying while it is down.
psql_src -c "SELECT once.topic_policy('h.x', max_attempts => 1000, backoff_base => '100 milliseconds',
                                      backoff_max => '500 milliseconds')" >/dev/null
http_stop
psql_src -c "SELECT count(once.send('h.x', jsonb_build_object('n', g))) FROM generate_series(1, 100) g" >/dev/null
once_wait_for "sink down logged (HTTP)" 30 hlog_has "warning: sink down: HTTP request failed" ||
    fail "no \"sink down\" line for HTTP: $(tail -5 "$HLOG")"
once_wait_for "20 failed attempts" 60 hlog_count_at_least "debug: sink error for message" 20 || fail "no retries while down"
http_start
once_wait_for "sink healed logged (HTTP)" 60 hlog_has "info: sink healed after" || fail "no \"sink healed\" line for HTTP"
once_wait_for "h.x delivered" 60 h_drained || fail "$(h_left) h.x messages left"
[ "$(hlines 'sink down: ')" = 1 ] || fail "HTTP \"sink down\" logged $(hlines 'sink down: ') times: $(grep 'sink down' "$HLOG")"
[ "$(hlines 'sink healed')" = 1 ] || fail "HTTP \"sink healed\" logged $(hlines 'sink healed') times"
[ "$(hlines 'warning: sink error for message')" -le 5 ] || fail "sink errors logged as warnings during the outage"
healed=$(grep 'sink healed' "$HLOG")
say "$healed"
[[ "$healed" =~ sink\ healed\ after\ [0-9]+\.[0-9]\ s\ \(down\ since:\ HTTP\ request\ failed.*\)\;\ ([0-9]+)\ attempt\(s\)\ failed\ meanwhile\;\ [0-9]+\ message\(s\)\ waiting ]] ||
    fail "unexpected HTTP healed line: $healed"
[ "${BASH_REMATCH[1]}" -ge 20 ] || fail "want >= 20 failed attempts in: $healed"

say "PostgreSQL outage"
once_as_server_user pg_ctl stop -D "$ONCE_CLUSTER_DIR/data" -m immediate -w >/dev/null
once_wait_for "database down logged" 30 log_has "warning: database down: " || fail "no \"database down\" line"
# Several reconnect attempts fail meanwhile (each logged at debug only).
once_wait_for "3 failed reconnects" 30 log_count_at_least "debug: database unavailable" 3 || fail "no reconnect attempts"
once_as_server_user pg_ctl start -w -t 60 -D "$ONCE_CLUSTER_DIR/data" -l "$ONCE_CLUSTER_DIR/server.log" \
    -o "-c listen_addresses='' -c unix_socket_directories='$ONCE_CLUSTER_DIR' -c port=5432" >/dev/null
once_wait_for "database back logged" 60 log_has "database back after" || fail "no \"database back\" line"
[ "$(lines 'database down: ')" = 1 ] || fail "\"database down\" logged $(lines 'database down: ') times: $(grep 'database down' "$LOG")"
[ "$(lines 'database back after')" = 1 ] || fail "\"database back\" logged $(lines 'database back after') times"
back=$(grep 'database back after' "$LOG")
say "$back"
[[ "$back" =~ info:\ reconnected\ to\ .+:\ database\ back\ after\ [0-9]+\.[0-9]\ s\ \(down\ since:\ .+\)\;\ ([0-9]+)\ attempt\(s\)\ failed\ meanwhile\;\ ([0-9]+)\ message\(s\)\ waiting ]] ||
    fail "unexpected line: $back"
[ "${BASH_REMATCH[1]}" -ge 3 ] || fail "want >= 3 failed attempts in: $back"
# Nothing else was logged above debug per attempt.
[ "$(lines 'warning: database unavailable')" = 0 ] || fail "reconnect attempts logged as warnings"
[ "$(lines 'metrics: cannot read the outbox gauges')" -le 1 ] || fail "gauge read failures logged more than once"
send_messages 100 10 5001
once_wait_for "600 at JetStream" 60 stream_has OL 600 || fail "stream has $(stream_msgs OL) of 600"
stop_relay r; [ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC"
stop_relay h; [ "$RELAY_RC" = 0 ] || fail "relay h: exit code $RELAY_RC"
say "relay_outage_logs: OK"
