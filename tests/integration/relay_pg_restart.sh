#!/usr/bin/env bash
# once-relay and a PostgreSQL restart (immediate mode) mid-run: the relay reconnects, re-LISTENs,
# drains and finishes; nothing lost, nothing twice at JetStream; /metrics counts the reconnect
# and /healthz reports the outage.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-10000}

start_postgres
start_nats
send_messages "$N" 1000
MPORT=$(free_port)
start_relay r --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=RS&subject_prefix=once.&create_stream=1" \
    --lease 2s --batch 100 --poll-interval 100ms --metrics "127.0.0.1:$MPORT" --reconnect-max 1s
once_wait_for "healthz up" 30 curl -sf "http://127.0.0.1:$MPORT/healthz" || fail "healthz not 200"
once_wait_for "some progress" 60 stream_has RS $((N / 4)) || fail "no progress"
say "restarting PostgreSQL (immediate) at $(stream_msgs RS) delivered"
once_as_server_user pg_ctl stop -D "$ONCE_CLUSTER_DIR/data" -m immediate -w >/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/healthz" || true)
once_wait_for "healthz down" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$MPORT/healthz)\" = 503 ]" || fail "healthz still $code while the database is down"
once_as_server_user pg_ctl start -w -t 60 -D "$ONCE_CLUSTER_DIR/data" -l "$ONCE_CLUSTER_DIR/server.log" \
    -o "-c listen_addresses='' -c unix_socket_directories='$ONCE_CLUSTER_DIR' -c port=5432" >/dev/null
send_messages 1000 1000 900001   # sent after the restart: the relay must wake up for them
once_wait_for "all at JetStream" 180 stream_has RS $((N + 1000)) || fail "stream has $(stream_msgs RS) of $((N + 1000))"
once_wait_for "outbox drained" 60 outbox_empty || fail "outbox still has $(outbox_left)"
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$T/metrics.txt"
grep -Eq '^once_relay_reconnects_total [1-9]' "$T/metrics.txt" || fail "no reconnect counted: $(grep reconnects "$T/metrics.txt")"
grep -q '^once_relay_publish_latency_seconds_count' "$T/metrics.txt" || fail "no latency histogram"
relay_log_has r "reconnected" || fail "no reconnect logged"
stop_relay r; [ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC"
[ "$(stream_msgs RS)" = $((N + 1000)) ] || fail "JetStream has $(stream_msgs RS), want exactly $((N + 1000))"
say "relay_pg_restart: OK"
