#!/usr/bin/env bash
# The inbound relay (once-relay --source) started while NATS is down, as after a reboot where
# the relay comes up first: it does not exit, it tries again with a backoff, and once the
# server is back (with its stream, kept on disk) it creates its consumer and delivers. A
# configuration error (a stream that does not exist) still ends it at once: see
# relay_inbound_nats. SIGTERM while it waits for the server ends it cleanly.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
start_nats
start_relay out --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=ONCE&subject_prefix=once.&create_stream=1" \
    --poll-interval 100ms
psql_src -c "SELECT count(once.send('once.t', jsonb_build_object('n', g))) FROM generate_series(1, 20) g" >/dev/null
once_wait_for "20 messages in the stream" 30 stream_has ONCE 20 || fail "stream ONCE has $(stream_msgs ONCE)"
stop_relay out
nats_pid=${BG_PIDS[-1]}
kill -TERM "$nats_pid"; wait "$nats_pid" 2>/dev/null || true
! curl -sf "http://127.0.0.1:$NATS_MON/healthz" >/dev/null || fail "nats-server still answers"

say "NATS down: a relay waiting for it stops cleanly on SIGTERM"
SOURCE_URI="nats://127.0.0.1:$NATS_PORT?stream=ONCE&consumer=dst&filter=once.>"
start_relay early --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" --source "$SOURCE_URI" --reconnect-max 1s
once_wait_for "the relay says it tries again" 30 relay_log_has early "trying again in" ||
    fail "no retry logged: $(tail -3 "$T/relay-early.log")"
stop_relay early
[ "$RELAY_RC" = 0 ] || fail "the waiting relay did not stop cleanly on SIGTERM ($RELAY_RC)"

say "NATS down: the relay keeps trying, and delivers once the server is back"
start_relay in --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" --source "$SOURCE_URI" --reconnect-max 1s
once_wait_for "the relay says it tries again" 30 relay_log_has in "trying again in" ||
    fail "no retry logged: $(tail -3 "$T/relay-in.log")"
relay_running() { kill -0 "$(relay_child in)" 2>/dev/null; }
relay_running || fail "the relay exited while NATS was down: $(tail -3 "$T/relay-in.log")"
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$T/nats" >>"$T/nats.log" 2>&1 &
BG_PIDS+=($!)
once_wait_for "nats-server back" 20 curl -sf "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true"
once_wait_for "20 handled in dst" 60 inbox_has 20 || fail "dst has $(psql_dst -c 'SELECT count(*) FROM relay_received')"
[ "$(psql_dst -c 'SELECT count(*) FROM relay_received')" = 20 ] || fail "a message was handled twice"
relay_log_has in "created durable consumer dst" || fail "the consumer was not created after the wait"
stop_relay in
[ "$RELAY_RC" = 0 ] || fail "relay exit $RELAY_RC"
say "PASS"
